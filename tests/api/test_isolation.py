"""No workspace touches another's data, over HTTP: what a refused request leaves behind."""

from __future__ import annotations

import uuid

import httpx
import pytest

from convrag.services import Services
from tests import test_server as server_tests
from tests.conftest import thread_rows

_auth = server_tests._auth
_conversation = server_tests._conversation


@pytest.mark.parametrize("accept", ["text/event-stream", "application/json"])
async def test_a_message_to_another_workspaces_conversation_leaves_its_thread_untouched(
    base_url: str, services: Services, tenant: dict[str, str], accept: str
) -> None:
    """Workspace B's message to A's conversation is a 404, and nothing of it is stored
    under A's checkpoint thread (where A's Studio would show it, and a resumed run would
    answer it as A's question)."""
    other_ws = f"ws-{uuid.uuid4().hex[:10]}"
    other = {"workspace": other_ws, "key": await services.db.workspaces.create_api_key(other_ws)}
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        asked = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers={**_auth(tenant), "Accept": "application/json"},
        )
        assert asked.status_code == 200, asked.text
        await services.db.prune_checkpoints(conv)  # at rest: as the turn's own settling leaves it
        before = await thread_rows(services, conv)
        assert before
        intruding = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "INTRUDER from the other workspace"},
            headers={**_auth(other), "Accept": accept},
        )
        assert intruding.status_code == 404, intruding.text
        assert f"conversation {conv} not found" in intruding.json()["detail"]
        assert await thread_rows(services, conv) == before
        unknown = str(uuid.uuid4())
        missing = await client.post(
            f"{base_url}/v1/conversations/{unknown}/messages",
            json={"content": "INTRUDER to no conversation"},
            headers={**_auth(other), "Accept": accept},
        )
        assert missing.status_code == 404, missing.text
        assert await thread_rows(services, unknown) == []
        mine = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
    assert [t["question"] for t in mine.json()["turns"]] == ["What is Prasad Chaudhari's salary?"]
