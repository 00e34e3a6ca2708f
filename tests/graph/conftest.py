"""Graph fixtures: the assistant on the session's embedded stack, seeded documents, and the
OpenAI/Serper stubs reached through the real client code."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest

from convrag.assistant import Assistant, open_assistant
from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub
from convrag.testing.serper_stub import SerperStub
from convrag.web import WebSearch
from tests.conftest import stub_llm

SAMPLES = Path(str(resources.files("convrag") / "sample_docs"))
EMPLOYEES = (SAMPLES / "employee_data.txt").read_text()
HANDBOOK = (SAMPLES / "field_handbook.md").read_text()


@pytest.fixture
async def assistant(services: Services) -> AsyncIterator[Assistant]:
    async with open_assistant(services=services) as bot:
        yield bot
    await services.drain()


@pytest.fixture
async def seeded(services: Services, workspace: str, tmp_path: Path) -> str:
    files = {"employee_data.txt": EMPLOYEES, "handbook.md": HANDBOOK}
    docs = []
    for name, text in files.items():
        p = tmp_path / name
        p.write_text(text)
        docs.extend(load_path(p, max_bytes=10**6))
    await ingest_documents(services, workspace, docs)
    return workspace


async def doc_id(services: Services, workspace: str, name: str) -> str:
    for d in await services.db.documents.list_documents(workspace):
        if str(d["source"]).endswith(name):
            return str(d["id"])
    raise AssertionError(f"{name} not ingested")


@pytest.fixture
async def llm(services: Services, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenAIStub]:
    """An OpenAI-compatible stub; the services' settings point langchain-openai at it."""
    async with stub_llm(services, monkeypatch) as stub:
        yield stub


@pytest.fixture
async def serper(services: Services, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SerperStub]:
    """A Serper stub, reached by the real wrapper through SERPER_BASE_URL's middleware."""
    async with SerperStub() as stub:
        web = WebSearch("serper-test-key", base_url=stub.base_url)
        monkeypatch.setattr(services, "web", web)
        yield stub
        await web.aclose()


__all__ = ["doc_id", "replace"]
