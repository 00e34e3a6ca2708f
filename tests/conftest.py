"""Shared fixtures: one real embedded stack (PostgreSQL + Milvus Lite) per test session.

Tests isolate themselves by workspace id, which is also what the product relies on. The
fast tier, ``tests/unit/``, never starts this stack (``tests/unit/conftest.py``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

os.environ.setdefault("LANGSMITH_TRACING", "false")
os.environ.setdefault("LANGGRAPH_CLI_NO_ANALYTICS", "1")
for _var in (
    "DATABASE_URL",
    "MILVUS_URI",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SERPER_API_KEY",
    "LLM_MODEL",
    "EMBEDDING_MODEL",
):
    os.environ.pop(_var, None)

from convrag.config import Settings  # noqa: E402
from convrag.services import Services, open_services  # noqa: E402
from convrag.testing.openai_stub import OpenAIStub, Reply  # noqa: E402
from tests.serving import scratch_dir  # noqa: E402


@pytest.fixture(scope="session")
def data_dir() -> Iterator[Path]:
    with scratch_dir("test") as path:
        yield path


@pytest.fixture(scope="session")
def settings(data_dir: Path) -> Settings:
    return Settings(data_dir=data_dir)


@pytest.fixture(scope="session")
async def services(settings: Settings) -> AsyncIterator[Services]:
    async with open_services(settings) as svc:
        yield svc


@pytest.fixture
def workspace() -> str:
    return f"ws-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def docs_dir(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "docs"
    d.mkdir()
    yield d


def use_stub_llm(services: Services, monkeypatch: pytest.MonkeyPatch, base_url: str) -> None:
    """Point the services' settings at an OpenAI-compatible stub (real ChatOpenAI code)."""
    from pydantic import SecretStr

    monkeypatch.setattr(
        services,
        "settings",
        services.settings.model_copy(
            update={
                "openai_base_url": base_url,
                "openai_api_key": SecretStr("test-key"),
                "llm_model": "openai:stub-model",
            }
        ),
    )


@asynccontextmanager
async def stub_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch, *rules: tuple[str, Reply]
) -> AsyncIterator[OpenAIStub]:
    """An OpenAI-compatible stub for the block, the services' LLM (:func:`use_stub_llm`):
    a prompt gets the reply of the first rule whose text it holds."""
    async with OpenAIStub() as stub:
        for prompt_holds, reply in rules:
            stub.add_rule(prompt_holds, reply)
        use_stub_llm(services, monkeypatch, stub.base_url)
        yield stub


async def checkpoint_count(services: Services, thread_id: str) -> int:
    """How many checkpoints the checkpointer keeps for ``thread_id``."""
    async with services.db.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM checkpoints WHERE thread_id = %s", (thread_id,)
            )
        ).fetchone()
    assert row is not None
    return int(row["n"])


async def kept_originals(services: Services, workspace_id: str) -> list[tuple[str, bytes]]:
    """The workspace's kept upload originals, ``(file name, bytes)`` sorted by name, read
    whole from the store's parts."""
    async with services.db.pool.connection() as conn:
        rows = await (
            await conn.execute(
                """SELECT o.filename, coalesce((SELECT string_agg(p.data, ''::bytea ORDER BY p.seq)
                                               FROM original_parts p WHERE p.original_id = o.id),
                                              ''::bytea) AS data
                   FROM originals o WHERE o.workspace_id = %s""",
                (workspace_id,),
            )
        ).fetchall()
    return sorted((r["filename"], bytes(r["data"])) for r in rows)


async def thread_rows(services: Services, thread_id: str) -> list[tuple[str, str]]:
    """Every row the checkpointer keeps for ``thread_id``, whole (as JSON text, blobs in
    hex), in a stable order: two equal lists mean the thread is byte-for-byte as it was."""
    rows: list[tuple[str, str]] = []
    async with services.db.pool.connection() as conn:
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            found = await (
                await conn.execute(
                    f"SELECT to_jsonb(t)::text AS r FROM {table} t WHERE thread_id = %s ORDER BY 1",
                    (thread_id,),
                )
            ).fetchall()
            rows += [(table, r["r"]) for r in found]
    return rows
