"""The turn runner at shutdown: a stopped turn's stream ends with an ``error`` event, its
JSON reply is a 503, and the turn is stored as stopped (tests/test_faults.py sends the
SIGTERM itself to a ``convrag serve`` process)."""

from __future__ import annotations

import asyncio

import httpx
from fastapi import FastAPI

from convrag.api.turns import SHUTTING_DOWN, TurnRunner
from convrag.assistant import STOPPED_TURN
from convrag.testing.openai_stub import OpenAIStub
from tests.test_server import sse_events


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
