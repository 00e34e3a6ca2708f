"""What the service tells its operator: the startup summary and the log format."""

from __future__ import annotations

from convrag.api.app import _summary
from convrag.server import log_config
from convrag.services import Services


def test_the_startup_summary_names_the_stores_models_and_retention(services: Services) -> None:
    line = _summary(services)
    assert f"data {services.settings.data_dir};" in line
    assert "PostgreSQL embedded" in line or "PostgreSQL external (DATABASE_URL)" in line
    assert f"embedder {services.embedder.name};" in line
    assert "LLM none (answers quote the documents)" in line and "retention keep forever" in line


def test_the_service_logs_convrag_lines_at_info_with_time_level_and_name() -> None:
    config = log_config()
    assert config["loggers"]["convrag"] == {
        "handlers": ["convrag"],
        "level": "INFO",
        "propagate": False,
    }
    fmt = config["formatters"]["convrag"]["fmt"]
    assert "%(asctime)s" in fmt and "%(name)s" in fmt and "%(levelprefix)s" in fmt
    assert "%(asctime)s" in config["formatters"]["access"]["fmt"]
