"""Two workers on one database (``convrag serve --workers N``), over HTTP: a delete, a
message and a stop that reach one worker act on what the other one does.

The other worker is a second app served in this process (:func:`_other_worker`) with a
``Database`` of its own: its own pool, its own liveness key (the ``owner`` of the turns
it answers) and its own stop listener, as another process would have. Its other stores
are this process's, which these tests do not tell apart.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from convrag.assistant import STOPPED_TURN
from convrag.errors import ANSWERING, BEING_DELETED
from convrag.server import create_app
from convrag.services import Services
from convrag.stores.database import Database
from convrag.testing.openai_stub import OpenAIStub, Reply
from tests.conftest import checkpoint_count, stub_llm
from tests.serving import free_port
from tests.test_server import sse_events

JSON = {"Accept": "application/json"}
QUESTION = "What is Prasad Chaudhari's basic salary?"
ASK = {"content": QUESTION}


def _auth(tenant: dict[str, str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {tenant['key']}"}


@asynccontextmanager
async def _serving(app: FastAPI) -> AsyncIterator[str]:
    """``app`` served on a free port of 127.0.0.1 for the block; its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = asyncio.get_running_loop().create_task(server.serve())
    try:
        while not server.started:
            assert not task.done(), "the other worker did not start"
            await asyncio.sleep(0.02)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@asynccontextmanager
async def _other_worker(services: Services) -> AsyncIterator[str]:
    """Another worker on the test database, served for the block; its base URL. Made
    from ``services`` as they are now (an LLM stub already set in their settings)."""
    async with Database.from_url(services.database_url, max_size=4) as db:
        assert db.owner != services.db.owner
        async with _serving(create_app(services=dataclasses.replace(services, db=db))) as base:
            yield base


@pytest.fixture
async def slow_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAIStub]:
    """An LLM whose answer takes a few seconds, token by token (a bound, not a measure:
    long enough for a request to land while it streams)."""
    reply = Reply(content="Prasad Chaudhari's basic salary is $80,000 [1]. " * 3, token_delay_s=0.2)
    async with stub_llm(services, monkeypatch, ("CURRENT QUESTION", reply)) as stub:
        yield stub


async def _conversation(client: httpx.AsyncClient, base: str, tenant: dict[str, str]) -> str:
    resp = await client.post(f"{base}/v1/conversations", headers=_auth(tenant))
    assert resp.status_code == 201, resp.text
    return str(resp.json()["conversation_id"])


async def _count(services: Services, query: str, conversation_id: str) -> int:
    async with services.db.pool.connection() as conn:
        row = await (await conn.execute(query, (conversation_id,))).fetchone()
    return int(row["n"]) if row else 0


async def test_a_delete_while_another_worker_answers_gets_409_and_the_answer_is_kept(
    base_url: str, services: Services, tenant: dict[str, str], slow_llm: OpenAIStub
) -> None:
    """The worker that got the delete answers nothing in the conversation; the other
    one's ``processing`` turn, whose process is alive, refuses the delete all the same."""
    async with _other_worker(services) as other, httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        first_token = asyncio.Event()
        answering = asyncio.create_task(
            sse_events(
                client, f"{other}/v1/conversations/{conv}/messages", ASK, _auth(tenant), first_token
            )
        )
        await asyncio.wait_for(first_token.wait(), 60)
        url = f"{base_url}/v1/conversations/{conv}"
        refused = await client.delete(url, headers=_auth(tenant))
        events = await answering
        turns = (await client.get(url, headers=_auth(tenant))).json()["turns"]
        deleted = await client.delete(url, headers=_auth(tenant))
        gone = await client.get(f"{other}/v1/conversations/{conv}", headers=_auth(tenant))
    assert refused.status_code == 409 and refused.json()["detail"] == ANSWERING
    assert events[-1][0] == "done"
    assert [t["status"] for t in turns] == ["done"]
    assert deleted.status_code == 204 and gone.status_code == 404


async def test_a_message_to_another_worker_while_a_delete_is_under_way_is_a_409_and_stays_deleted(
    base_url: str,
    services: Services,
    tenant: dict[str, str],
    held_vector_delete: tuple[threading.Event, threading.Event],
) -> None:
    """The delete clears the vectors and checkpoints before the rows; a turn the other
    worker started meanwhile would write them again and, once answered, bring the
    deleted conversation back."""
    entered, release = held_vector_delete
    async with _other_worker(services) as other, httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        deleting = asyncio.create_task(
            client.delete(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        )
        try:
            assert await asyncio.to_thread(entered.wait, 30)
            url = f"{other}/v1/conversations/{conv}/messages"
            sent = await client.post(url, json={"content": QUESTION}, headers=_auth(tenant) | JSON)
            streamed = await client.post(url, json={"content": QUESTION}, headers=_auth(tenant))
        finally:
            release.set()
        deleted = await deleting
        gone = await client.get(f"{other}/v1/conversations/{conv}", headers=_auth(tenant))
    assert deleted.status_code == 204
    for refused in (sent, streamed):
        assert refused.status_code == 409 and refused.json()["detail"] == BEING_DELETED
    assert gone.status_code == 404
    turns = "SELECT count(*) AS n FROM conversation_turns WHERE conversation_id = %s"
    assert await _count(services, turns, conv) == 0
    assert await checkpoint_count(services, conv) == 0  # nor the refused runs' own


async def _turns_by_outcome(client: httpx.AsyncClient, base: str) -> dict[str, float]:
    """``convrag_turns_total`` by outcome, as a scrape of ``base`` reads it."""
    text = (await client.get(f"{base}/metrics")).text
    return {
        sample.labels["outcome"]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "convrag_turns"
        for sample in family.samples
        if sample.name == "convrag_turns_total"
    }


async def test_a_message_another_worker_refuses_while_one_answers_counts_as_no_failed_turn(
    base_url: str, services: Services, tenant: dict[str, str], slow_llm: OpenAIStub
) -> None:
    """The 409 is counted in ``convrag_http_errors_total``; no turn started, so
    ``convrag_turns_total{outcome="error"}`` stays as it was (both workers of this test
    count in this process's registry)."""
    async with _other_worker(services) as other, httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        before = await _turns_by_outcome(client, base_url)
        first_token = asyncio.Event()
        answering = asyncio.create_task(
            sse_events(
                client, f"{other}/v1/conversations/{conv}/messages", ASK, _auth(tenant), first_token
            )
        )
        await asyncio.wait_for(first_token.wait(), 60)
        refused = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "And John Doe's?"},
            headers=_auth(tenant) | JSON,
        )
        events = await answering
        after = await _turns_by_outcome(client, base_url)
    assert refused.status_code == 409, refused.text
    assert events[-1][0] == "done"
    assert after.get("error", 0) == before.get("error", 0)
    assert after.get("ok", 0) == before.get("ok", 0) + 1


async def test_a_stop_sent_to_another_worker_stops_the_answer_it_writes(
    base_url: str, services: Services, tenant: dict[str, str], endless_llm: OpenAIStub
) -> None:
    """The stop reaches the worker that does not answer; it answers as that one would:
    once the turn is stored ``failed`` (stopped), and its stream ends with ``error:
    stopped``."""
    async with _other_worker(services) as other, httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        stop_url = f"{base_url}/v1/conversations/{conv}/stop"
        idle = await client.post(stop_url, headers=_auth(tenant))
        first_token = asyncio.Event()
        answering = asyncio.create_task(
            sse_events(
                client, f"{other}/v1/conversations/{conv}/messages", ASK, _auth(tenant), first_token
            )
        )
        await asyncio.wait_for(first_token.wait(), 60)
        stopped = await client.post(stop_url, headers=_auth(tenant))
        events = await asyncio.wait_for(answering, 60)
        detail = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        again = await client.post(stop_url, headers=_auth(tenant))
    assert idle.status_code == 200
    assert idle.json() == {"conversation_id": conv, "stopped": False, "turn_id": None}
    assert stopped.status_code == 200, stopped.text
    turn_id = stopped.json()["turn_id"]
    assert stopped.json() == {"conversation_id": conv, "stopped": True, "turn_id": turn_id}
    assert events[-1] == ("error", {"code": "stopped", "message": STOPPED_TURN})
    assert "done" not in [name for name, _ in events]
    turns = detail.json()["turns"]
    assert [(t["id"], t["status"], t["error"]) for t in turns] == [
        (turn_id, "failed", STOPPED_TURN)
    ]
    assert again.json()["stopped"] is False
