"""Deleting a conversation while it is in use, over HTTP: what is deleted stays deleted."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

from convrag.services import Services
from tests import test_server as server_tests
from tests.conftest import checkpoint_count
from tests.legacy import conversation_vectors, legacy_memory_vector

_auth = server_tests._auth
_conversation = server_tests._conversation

JSON = {"Accept": "application/json"}


async def _turn_rows(services: Services, conversation_id: str) -> int:
    async with services.db.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM conversation_turns WHERE conversation_id = %s",
                (conversation_id,),
            )
        ).fetchone()
    return int(row["n"]) if row else 0


async def test_a_message_sent_while_its_conversation_is_being_deleted_is_a_409_and_stays_deleted(
    base_url: str,
    services: Services,
    tenant: dict[str, str],
    held_vector_delete: tuple[threading.Event, threading.Event],
) -> None:
    """The delete clears the vectors and checkpoints before the rows; a message that
    started meanwhile was answered, and its answer brought the deleted conversation back."""
    entered, release = held_vector_delete
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}"
        deleting = asyncio.create_task(client.delete(url, headers=_auth(tenant)))
        try:
            assert await asyncio.to_thread(entered.wait, 30)
            sent = await client.post(
                f"{url}/messages",
                json={"content": "What is Prasad Chaudhari's salary?"},
                headers={**_auth(tenant), **JSON},
            )
        finally:
            release.set()
        assert (await deleting).status_code == 204
        assert sent.status_code == 409, sent.text
        assert "being deleted" in sent.json()["detail"]
        assert (await client.get(url, headers=_auth(tenant))).status_code == 404
        listed = await client.get(f"{base_url}/v1/conversations", headers=_auth(tenant))
    assert conv not in [c["id"] for c in listed.json()["conversations"]]
    assert await _turn_rows(services, conv) == 0


async def test_a_delete_removes_the_memory_vectors_an_earlier_version_wrote_for_its_turns(
    base_url: str, services: Services, tenant: dict[str, str]
) -> None:
    """A collection made before conversation memory's removal holds a vector of each
    answered turn, with its text: the conversation's delete removes it."""
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}"
        asked = await client.post(
            f"{url}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers={**_auth(tenant), **JSON},
        )
        assert asked.status_code == 200, asked.text
        text = f"Q: What is Prasad Chaudhari's salary?\nA: {asked.json()['answer']}"
        await legacy_memory_vector(services, tenant["workspace"], conv, text)
        assert await conversation_vectors(services, conv) != []
        assert (await client.delete(url, headers=_auth(tenant))).status_code == 204
    assert await conversation_vectors(services, conv) == []


async def test_a_message_whose_conversation_is_deleted_before_its_turn_starts_leaves_no_checkpoint(
    base_url: str, services: Services, tenant: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The route found the conversation, then another worker deleted it before the turn
    stored the question: the turn is refused (404), and the checkpoint LangGraph writes
    when a run ends on an error must not stay behind for a conversation nobody has."""
    exists = services.db.conversations.conversation_exists
    deleted: list[str] = []

    async def then_deleted(workspace_id: str, conversation_id: str) -> bool:
        found = await exists(workspace_id, conversation_id)
        if found and conversation_id == conv and not deleted:  # deleted elsewhere, now
            deleted.append(conversation_id)
            assert await services.db.conversations.delete_conversation(
                workspace_id, conversation_id
            )
        return found

    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        monkeypatch.setattr(services.db.conversations, "conversation_exists", then_deleted)
        sent = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers={**_auth(tenant), **JSON},
        )
    assert deleted == [conv]
    assert sent.status_code == 404, sent.text
    assert await checkpoint_count(services, conv) == 0
