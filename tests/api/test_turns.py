"""The turn runner at shutdown: a stopped turn's stream ends with an ``error`` event, its
JSON reply is a 503, and the turn is stored as stopped (tests/test_faults.py sends the
SIGTERM itself to a ``convrag serve`` process). And stops: asked again, from this process
or another (tests/test_workers.py stops a turn across real worker processes)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI

from convrag.api import turns
from convrag.api.turns import SHUTTING_DOWN, TurnRunner
from convrag.assistant import STOPPED_TURN, Assistant
from convrag.services import Services
from convrag.stores.database import Database
from convrag.testing.openai_stub import OpenAIStub
from tests.test_server import sse_events

QUESTION = "What is Prasad Chaudhari's basic salary?"


async def test_stopping_the_runner_ends_open_streams_with_an_error_and_fails_their_turns(
    app_server: tuple[str, FastAPI], tenant: dict[str, str], endless_llm: OpenAIStub
) -> None:
    base, app = app_server
    runner: TurnRunner = app.state.runner
    auth = {"Authorization": f"Bearer {tenant['key']}"}
    try:
        async with httpx.AsyncClient(timeout=60) as client:
            convs = [
                (await client.post(f"{base}/v1/conversations", headers=auth)).json()[
                    "conversation_id"
                ]
                for _ in range(2)
            ]
            started = asyncio.Event()
            streamed = asyncio.create_task(
                sse_events(
                    client,
                    f"{base}/v1/conversations/{convs[0]}/messages",
                    {"content": "What is Prasad Chaudhari's basic salary?"},
                    auth,
                    started,
                )
            )
            replied = asyncio.create_task(
                client.post(
                    f"{base}/v1/conversations/{convs[1]}/messages",
                    json={"content": "What is Prasad Chaudhari's basic salary?"},
                    headers={**auth, "Accept": "application/json"},
                )
            )
            await asyncio.wait_for(started.wait(), 60)
            while len(runner.active) < 2:  # the JSON turn is under way too
                await asyncio.sleep(0.05)

            await runner.stop_all()

            events = await asyncio.wait_for(streamed, 60)
            reply = await asyncio.wait_for(replied, 60)
            refused = await client.post(
                f"{base}/v1/conversations/{convs[0]}/messages",
                json={"content": "And John?"},
                headers=auth,
            )
            turns = [
                (await client.get(f"{base}/v1/conversations/{c}", headers=auth)).json()["turns"]
                for c in convs
            ]
    finally:
        app.state.runner = TurnRunner(runner.assistant)  # the module's server serves on

    assert "token" in [n for n, _ in events] and "done" not in [n for n, _ in events]
    assert events[-1] == ("error", {"code": "shutting_down", "message": SHUTTING_DOWN})
    assert reply.status_code == 503 and reply.json()["detail"] == SHUTTING_DOWN
    assert reply.headers["retry-after"].isdigit()
    assert refused.status_code == 503 and refused.json()["detail"] == SHUTTING_DOWN
    for stored in turns:
        assert [(t["status"], t["error"]) for t in stored] == [("failed", STOPPED_TURN)]


async def _streaming(
    client: httpx.AsyncClient, base: str, auth: dict[str, str]
) -> tuple[str, asyncio.Task[list[tuple[str, dict[str, object]]]]]:
    """A new conversation and the task reading its endless answer's stream, once the first
    token has arrived."""
    created = await client.post(f"{base}/v1/conversations", headers=auth)
    conversation = str(created.json()["conversation_id"])
    started = asyncio.Event()
    streamed = asyncio.create_task(
        sse_events(
            client,
            f"{base}/v1/conversations/{conversation}/messages",
            {"content": QUESTION},
            auth,
            started,
        )
    )
    await asyncio.wait_for(started.wait(), 60)
    return conversation, streamed


async def test_a_stop_from_another_process_asks_again_when_its_first_request_goes_unheard(
    app_server: tuple[str, FastAPI],
    tenant: dict[str, str],
    endless_llm: OpenAIStub,
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A notification is not stored: the answering process misses one sent while its
    listening connection is being opened again. The stop asks again until the turn is
    stored stopped, instead of a 503 after ten seconds."""
    base, app = app_server
    runner: TurnRunner = app.state.runner
    heard: list[str] = []
    hear = runner.stop_requested

    def deaf_to_the_first(payload: str) -> None:
        heard.append(payload)
        if len(heard) > 1:
            hear(payload)

    monkeypatch.setattr(runner, "stop_requested", deaf_to_the_first)
    monkeypatch.setattr(turns, "STOP_ASK_AGAIN_S", 0.2, raising=False)
    auth = {"Authorization": f"Bearer {tenant['key']}"}
    async with httpx.AsyncClient(timeout=60) as client:
        conversation, streamed = await _streaming(client, base, auth)
        # Another process: its own store connection and liveness key, the same database.
        async with Database.from_url(services.database_url, max_size=2) as elsewhere:
            other = TurnRunner(
                cast(Assistant, SimpleNamespace(services=SimpleNamespace(db=elsewhere)))
            )
            stopped = await other.stop(tenant["workspace"], conversation)
        events = await asyncio.wait_for(streamed, 60)
    assert stopped is not None and len(heard) >= 2
    assert events[-1] == ("error", {"code": "stopped", "message": STOPPED_TURN})


async def test_a_second_stop_waits_for_the_first_instead_of_cutting_short_its_storing(
    app_server: tuple[str, FastAPI],
    tenant: dict[str, str],
    endless_llm: OpenAIStub,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second stop of a turn whose first stop is storing it (a double click, a request
    asked again) waits for it: it does not cancel that storing, which left the turn
    ``processing``. Both report the turn stopped."""
    base, app = app_server
    runner: TurnRunner = app.state.runner
    storing, release = asyncio.Event(), asyncio.Event()
    fail_turn = runner.assistant.fail_turn

    async def held(*args: Any, **kwargs: Any) -> None:
        storing.set()
        await asyncio.wait_for(release.wait(), 30)
        await fail_turn(*args, **kwargs)

    monkeypatch.setattr(runner.assistant, "fail_turn", held)
    auth = {"Authorization": f"Bearer {tenant['key']}"}
    async with httpx.AsyncClient(timeout=60) as client:
        conversation, streamed = await _streaming(client, base, auth)
        first = asyncio.create_task(runner.stop(tenant["workspace"], conversation))
        await asyncio.wait_for(storing.wait(), 30)
        second = asyncio.create_task(runner.stop(tenant["workspace"], conversation))
        await asyncio.sleep(0.2)  # the second stop is under way
        release.set()
        stops = await asyncio.gather(first, second)
        events = await asyncio.wait_for(streamed, 60)
        detail = await client.get(f"{base}/v1/conversations/{conversation}", headers=auth)
    assert stops[0] is not None and stops == [stops[0], stops[0]]
    assert events[-1] == ("error", {"code": "stopped", "message": STOPPED_TURN})
    turns_stored = detail.json()["turns"]
    assert [(t["status"], t["error"]) for t in turns_stored] == [("failed", STOPPED_TURN)]
