"""What the service tells its operator: the startup summary and the log format."""

from __future__ import annotations

from convrag.api.app import (
    _summary,
    retention_notice,
)
from convrag.services import Services


def test_the_startup_summary_names_the_stores_models_and_retention(services: Services) -> None:
    line = _summary(services)
    assert f"data {services.settings.data_dir};" in line
    assert "PostgreSQL embedded" in line or "PostgreSQL external (DATABASE_URL)" in line
    assert f"embedder {services.embedder.name};" in line
    assert "LLM none (answers quote the documents)" in line and "retention keep forever" in line


def test_the_start_says_conversations_are_kept_forever_naming_the_ttl_setting(
    services: Services,
) -> None:
    kept = services.settings.model_copy(update={"conversation_ttl_days": None})
    notice = retention_notice(kept)
    assert notice is not None and "kept forever" in notice
    assert "CONVERSATION_TTL_DAYS=N" in notice
    off = services.settings.model_copy(update={"conversation_ttl_days": 0})
    assert retention_notice(off) == notice
    swept = services.settings.model_copy(update={"conversation_ttl_days": 30})
    assert retention_notice(swept) is None


def test_a_serve_worker_names_the_stores_its_serve_started_embedded_not_external(
    services: Services,
) -> None:
    """``serve --workers N`` hands its workers the URLs of the embedded stores it started:
    a worker's line must not read as if the operator had set DATABASE_URL / MILVUS_URI."""
    line = _summary(services, supervised={"postgres", "milvus"})
    assert "PostgreSQL embedded, started by `convrag serve --workers`;" in line
    assert "Milvus Lite, embedded, started by `convrag serve --workers`;" in line
    assert "external" not in line
