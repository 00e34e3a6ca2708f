"""The API tests' served app and tenant: the fixtures of ``tests/test_server.py``, which
every module here uses (each module gets its own server, as the fixture is module-scoped),
and the stubs and holds that several modules here share."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator

import pytest

from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub, Reply
from tests.conftest import stub_llm
from tests.test_server import app_server, base_url, tenant

__all__ = ["app_server", "base_url", "endless_llm", "held_vector_delete", "tenant"]


@pytest.fixture
async def endless_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAIStub]:
    """An LLM that streams an answer far longer than any test waits for."""
    reply = Reply(content="Salary " * 400, token_delay_s=0.5)
    async with stub_llm(services, monkeypatch, ("CURRENT QUESTION", reply)) as stub:
        yield stub


@pytest.fixture
def held_vector_delete(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[threading.Event, threading.Event]]:
    """A conversation delete held inside its first step (its vectors): ``entered`` is set
    once a delete is there, and it goes on when the test sets ``release`` (at the latest
    30 s later, or when the test ends)."""
    entered, release = threading.Event(), threading.Event()
    delete_vectors = services.index.delete_conversation

    def held(workspace_id: str, conversation_id: str) -> None:
        entered.set()
        release.wait(30)
        delete_vectors(workspace_id, conversation_id)

    monkeypatch.setattr(services.index, "delete_conversation", held)
    yield entered, release
    release.set()
