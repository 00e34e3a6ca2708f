"""The HTTP service on the real embedded stack, over real HTTP (uvicorn on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import re
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from convrag.api.deps import RateLimiter, encode_cursor
from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.server import create_app
from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub, Reply
from tests.conftest import checkpoint_count, kept_originals, stub_llm, use_stub_llm
from tests.documents.samples import docx_bytes, pdf_bytes
from tests.graph.conftest import EMPLOYEES


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
async def app_server(services: Services) -> AsyncIterator[tuple[str, FastAPI]]:
    app = create_app(services=services)
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = asyncio.get_running_loop().create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    yield f"http://127.0.0.1:{port}", app
    server.should_exit = True
    await task


@pytest.fixture
def base_url(app_server: tuple[str, FastAPI]) -> str:
    return app_server[0]


@pytest.fixture
async def tenant(services: Services, tmp_path: Path) -> dict[str, str]:
    """A workspace with the employee document ingested and an API key."""
    workspace = f"ws-{uuid.uuid4().hex[:10]}"
    path = tmp_path / "employee_data.txt"
    path.write_text(EMPLOYEES)
    await ingest_documents(services, workspace, load_path(path, max_bytes=10**6))
    key = await services.db.workspaces.create_api_key(workspace)
    return {"workspace": workspace, "key": key}


def _auth(tenant: dict[str, str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {tenant['key']}"}


async def sse_events(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    first_token: asyncio.Event | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events of one POST, as (name, data) pairs; ``first_token`` is set as the
    first ``token`` event arrives (for a test that acts while the answer streams)."""
    events: list[tuple[str, dict[str, Any]]] = []
    async with client.stream("POST", url, json=body, headers=headers) as resp:
        assert resp.status_code == 200, await resp.aread()
        assert resp.headers["content-type"].startswith("text/event-stream")
        name = None
        async for line in resp.aiter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and name:
                events.append((name, json.loads(line[6:])))
                if name == "token" and first_token is not None:
                    first_token.set()
    return events


async def _conversation(client: httpx.AsyncClient, base: str, tenant: dict[str, str]) -> str:
    resp = await client.post(f"{base}/v1/conversations", headers=_auth(tenant))
    assert resp.status_code == 201
    return str(resp.json()["conversation_id"])


async def _two_turns(
    base: str, tenant: dict[str, str], question: str, follow_up: str
) -> tuple[list[tuple[str, dict[str, Any]]], list[tuple[str, dict[str, Any]]]]:
    """The SSE events of a question and its follow-up in a new conversation."""
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base, tenant)
        url = f"{base}/v1/conversations/{conv}/messages"
        first = await sse_events(client, url, {"content": question}, _auth(tenant))
        second = await sse_events(client, url, {"content": follow_up}, _auth(tenant))
    return first, second


async def test_sse_events_of_a_two_turn_follow_up_come_in_order(
    base_url: str, tenant: dict[str, str]
) -> None:
    first, second = await _two_turns(
        base_url, tenant, "What is Prasad Chaudhari's salary?", "What about her basic salary?"
    )
    for events in (first, second):
        names = [n for n, _ in events]
        assert names[0] == "rewrite" and names[1] == "sources" and names[-1] == "done"
        assert names.index("sources") < names.index("token") < names.index("citation")
    rewrite = second[0][1]
    assert rewrite["classification"] == "follow_up" and "Prasad Chaudhari" in rewrite["query"]
    done = second[-1][1]
    assert "$80,000" in done["answer"] and done["citations"]
    # Tokens after the last repetition/reset event preview the stored answer.
    last = max((i for i, (n, _) in enumerate(second) if n in ("repetition", "reset")), default=-1)
    streamed = "".join(d["text"] for n, d in second[last + 1 :] if n == "token")
    assert streamed.strip() == done["answer"]
    assert set(done["timings_ms"]) >= {"load_history", "rewrite", "retrieve_vectors", "persist"}


async def test_json_and_sse_replies_give_the_same_answer(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        c1 = await _conversation(client, base_url, tenant)
        c2 = await _conversation(client, base_url, tenant)
        body = {"content": "What is John Doe's basic salary?"}
        sse = await sse_events(
            client, f"{base_url}/v1/conversations/{c1}/messages", body, _auth(tenant)
        )
        resp = await client.post(
            f"{base_url}/v1/conversations/{c2}/messages",
            json=body,
            headers={**_auth(tenant), "Accept": "application/json"},
        )
    assert resp.status_code == 200
    data = resp.json()
    assert data["answer"] == sse[-1][1]["answer"]
    assert [c["marker"] for c in data["citations"]] == [
        c["marker"] for c in sse[-1][1]["citations"]
    ]
    sources = await httpx.AsyncClient().get(
        f"{base_url}/v1/messages/{data['turn_id']}/sources", headers=_auth(tenant)
    )
    assert sources.status_code == 200 and sources.json()[0]["marker"] == "[1]"


async def test_the_openai_client_works_streaming_and_not(
    base_url: str, tenant: dict[str, str]
) -> None:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key=tenant["key"], max_retries=0)
    messages: list[Any] = [
        {"role": "user", "content": "What is Prasad Chaudhari's salary?"},
        {"role": "assistant", "content": "Prasad Chaudhari's total salary is $120,000."},
        {"role": "user", "content": "What about her basic salary?"},
    ]
    reply = await client.chat.completions.create(model="convrag", messages=messages)
    text = reply.choices[0].message.content or ""
    assert "$80,000" in text
    assert reply.model_extra and reply.model_extra["citations"][0]["marker"] == "[1]"
    stream = await client.chat.completions.create(model="convrag", messages=messages, stream=True)
    parts, citations = [], None
    async for chunk in stream:
        parts.append(chunk.choices[0].delta.content or "")
        if chunk.choices[0].finish_reason == "stop":
            citations = (chunk.model_extra or {}).get("citations")
    assert "".join(parts).strip() == text
    assert citations and citations[0]["marker"] == "[1]"
    await client.close()


async def test_another_workspaces_ids_give_404_on_every_route(
    base_url: str, services: Services, tenant: dict[str, str], tmp_path: Path
) -> None:
    other_ws = f"ws-{uuid.uuid4().hex[:10]}"
    other = {"workspace": other_ws, "key": await services.db.workspaces.create_api_key(other_ws)}
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        resp = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers={**_auth(tenant), "Accept": "application/json"},
        )
        turn_id = resp.json()["turn_id"]
        doc_id = (await client.get(f"{base_url}/v1/documents", headers=_auth(tenant))).json()[0][
            "id"
        ]
        await client.post(
            f"{base_url}/v1/messages/{turn_id}/feedback",
            json={"rating": "up", "comment": "Prasad's answer was right"},
            headers=_auth(tenant),
        )
        b = _auth(other)
        checks = [
            ("GET", f"/v1/conversations/{conv}", None),
            ("PATCH", f"/v1/conversations/{conv}", {"title": "taken over"}),
            ("GET", f"/v1/conversations/{conv}/export", None),
            ("GET", f"/v1/conversations/{conv}/export?format=md", None),
            ("DELETE", f"/v1/conversations/{conv}", None),
            ("POST", f"/v1/conversations/{conv}/messages", {"content": "hi"}),
            ("GET", f"/v1/messages/{turn_id}/sources", None),
            ("POST", f"/v1/messages/{turn_id}/feedback", {"rating": "down"}),
            ("GET", f"/v1/documents/{doc_id}", None),
            ("GET", f"/v1/documents/{doc_id}/text", None),
            ("DELETE", f"/v1/documents/{doc_id}", None),
        ]
        for method, path, body in checks:
            r = await client.request(method, f"{base_url}{path}", json=body, headers=b)
            assert r.status_code == 404, (method, path, r.text)
            assert "Prasad" not in r.text
        listed = await client.get(f"{base_url}/v1/documents", headers=b)
        assert listed.status_code == 200 and listed.json() == []
        conversations = await client.get(f"{base_url}/v1/conversations", headers=b)
        assert conversations.status_code == 200
        assert conversations.json() == {"conversations": [], "next_cursor": None}
        # A's cursors page through A's lists only: B gets empty pages with them.
        await _conversation(client, base_url, tenant)
        a_page = await client.get(
            f"{base_url}/v1/conversations", params={"limit": 1}, headers=_auth(tenant)
        )
        a_cursor = a_page.json()["next_cursor"]
        assert a_cursor
        b_page = await client.get(
            f"{base_url}/v1/conversations", params={"limit": 1, "cursor": a_cursor}, headers=b
        )
        assert b_page.json() == {"conversations": [], "next_cursor": None}
        before_all = encode_cursor(
            "documents", (datetime(2000, 1, 1, tzinfo=UTC), str(uuid.UUID(int=0)))
        )
        doc_page = {"limit": 1, "cursor": before_all}
        mine_page = await client.get(
            f"{base_url}/v1/documents", params=doc_page, headers=_auth(tenant)
        )
        assert [d["id"] for d in mine_page.json()] == [doc_id]
        theirs = await client.get(f"{base_url}/v1/documents", params=doc_page, headers=b)
        assert theirs.status_code == 200 and theirs.json() == []
        assert "Link" not in theirs.headers and "X-Next-Cursor" not in theirs.headers
        # The one model is public to every key; it names nothing of A's.
        models = await client.get(f"{base_url}/v1/models", headers=b)
        assert [m["id"] for m in models.json()["data"]] == ["convrag"]
        # A's data is intact after B's attempts.
        detail = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        assert detail.json()["turns"][0]["feedback"]["rating"] == "up"
        mine = await client.get(f"{base_url}/v1/conversations", headers=_auth(tenant))
        titles = {c["id"]: c["title"] for c in mine.json()["conversations"]}
        assert titles[conv] == "What is Prasad Chaudhari's salary?"
        assert (
            await client.get(f"{base_url}/v1/documents/{doc_id}", headers=_auth(tenant))
        ).status_code == 200
        assert (
            "Prasad"
            in (
                await client.get(f"{base_url}/v1/documents/{doc_id}/text", headers=_auth(tenant))
            ).text
        )


async def test_bad_input_gets_clear_4xx_errors_and_never_500(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        no_key = await client.post(f"{base_url}/v1/conversations")
        assert no_key.status_code == 401 and "Authorization: Bearer" in no_key.json()["detail"]
        bad_key = await client.post(
            f"{base_url}/v1/conversations", headers={"Authorization": "Bearer nope"}
        )
        assert bad_key.status_code == 401
        too_long = await client.post(url, json={"content": "x" * 8001}, headers=_auth(tenant))
        assert too_long.status_code == 422 and "content" in too_long.json()["detail"]
        missing = await client.post(url, json={}, headers=_auth(tenant))
        assert missing.status_code == 422 and "content" in missing.json()["detail"]
        bad_rag = await client.post(
            url, json={"content": "q", "rag": {"top_k": 0}}, headers=_auth(tenant)
        )
        assert bad_rag.status_code == 422 and "rag.top_k" in bad_rag.json()["detail"]
        not_json = await client.post(
            url, content=b"{not json", headers={**_auth(tenant), "Content-Type": "application/json"}
        )
        assert not_json.status_code == 422
        huge = await client.post(
            url,
            content=b"x" * (1024 * 1024 + 10),
            headers={**_auth(tenant), "Content-Type": "application/json"},
        )
        assert huge.status_code == 413 and "limit" in huge.json()["detail"]
        assert "MAX_BODY_BYTES" in huge.json()["detail"]
        for path in (
            "/v1/conversations/not-a-uuid",
            f"/v1/conversations/{uuid.uuid4()}",
            f"/v1/documents/{uuid.uuid4()}",
            "/v1/messages/xyz/sources",
        ):
            r = await client.get(f"{base_url}{path}", headers=_auth(tenant))
            assert r.status_code == 404, path


@contextmanager
def rate_limited(app: FastAPI, per_minute: int) -> Iterator[None]:
    """The served ``app`` under a rate limit of ``per_minute`` for the block (a fresh
    bucket per key), and its own limiter again afterwards."""
    saved = app.state.limiter
    app.state.limiter = RateLimiter(per_minute)
    try:
        yield
    finally:
        app.state.limiter = saved


async def test_the_rate_limit_answers_429_with_retry_after(
    app_server: tuple[str, FastAPI], tenant: dict[str, str]
) -> None:
    base, app = app_server
    with rate_limited(app, 3):
        async with httpx.AsyncClient(timeout=30) as client:
            codes = [
                (await client.get(f"{base}/v1/documents", headers=_auth(tenant))) for _ in range(4)
            ]
    assert [r.status_code for r in codes] == [200, 200, 200, 429]
    assert int(codes[-1].headers["Retry-After"]) >= 1


@pytest.fixture
async def slow_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAIStub]:
    reply = Reply(
        content="Prasad Chaudhari's basic salary is $80,000 [1], as the record shows.",
        token_delay_s=0.15,
    )
    async with stub_llm(services, monkeypatch, ("CURRENT QUESTION", reply)) as stub:
        yield stub


async def test_a_second_message_while_answering_gets_409(
    base_url: str, tenant: dict[str, str], slow_llm: OpenAIStub
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        first = asyncio.create_task(
            sse_events(client, url, {"content": "What is the basic salary?"}, _auth(tenant))
        )
        await asyncio.sleep(0.5)
        second = await client.post(url, json={"content": "And John?"}, headers=_auth(tenant))
        assert second.status_code == 409 and "still answering" in second.json()["detail"]
        assert (await first)[-1][0] == "done"


async def test_deleting_a_conversation_while_it_answers_gets_409_then_deletes_after(
    base_url: str, tenant: dict[str, str], slow_llm: OpenAIStub
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}"
        answering = asyncio.create_task(
            sse_events(
                client, f"{url}/messages", {"content": "What is the basic salary?"}, _auth(tenant)
            )
        )
        await asyncio.sleep(0.5)
        busy = await client.delete(url, headers=_auth(tenant))
        assert busy.status_code == 409 and "answering" in busy.json()["detail"]
        assert (await answering)[-1][0] == "done"
        assert (await client.delete(url, headers=_auth(tenant))).status_code == 204
        assert (await client.get(url, headers=_auth(tenant))).status_code == 404


async def test_a_disconnect_mid_stream_leaves_the_conversation_consistent(
    base_url: str, tenant: dict[str, str], slow_llm: OpenAIStub
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        async with client.stream(
            "POST", url, json={"content": "What is the basic salary?"}, headers=_auth(tenant)
        ) as resp:
            async for line in resp.aiter_lines():
                if line.startswith("event: token"):
                    break  # the client goes away mid-answer
        for _ in range(100):
            detail = (
                await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
            ).json()
            if detail["turns"]:
                break
            await asyncio.sleep(0.1)
        assert len(detail["turns"]) == 1
        assert detail["turns"][0]["answer"].startswith("Prasad Chaudhari's basic salary")
        again = await client.post(
            url,
            json={"content": "Thanks!"},
            headers={**_auth(tenant), "Accept": "application/json"},
        )
        assert again.status_code == 200


@pytest.fixture
def slow_first_checkpoint(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next run's checkpoint write, after its answer is stored, takes 1.5 s: a window
    in which the turn is answered while its run is still going."""
    checkpoints = services.db.checkpoints
    write = checkpoints.aput
    slowed = asyncio.Event()

    async def slow_first_write(*args: Any, **kwargs: Any) -> Any:
        if not slowed.is_set():
            slowed.set()
            await asyncio.sleep(1.5)
        return await write(*args, **kwargs)

    monkeypatch.setattr(checkpoints, "aput", slow_first_write)


@pytest.mark.usefixtures("slow_first_checkpoint")
async def test_the_next_message_after_a_stored_answer_waits_for_its_run_instead_of_a_409(
    base_url: str, tenant: dict[str, str]
) -> None:
    """A client that reads the stored answer back may send its next message (or delete
    the conversation) while the run is still writing its checkpoint: it got a 409."""
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}"
        first = asyncio.create_task(
            sse_events(
                client, f"{url}/messages", {"content": "What is the basic salary?"}, _auth(tenant)
            )
        )
        for _ in range(200):
            turns = (await client.get(url, headers=_auth(tenant))).json()["turns"]
            if turns and turns[0]["status"] == "done":
                break
            await asyncio.sleep(0.02)
        assert not first.done()  # its run is still writing the checkpoint
        again = await client.post(
            f"{url}/messages",
            json={"content": "And the bonus?"},
            headers={**_auth(tenant), "Accept": "application/json"},
        )
        assert again.status_code == 200, again.text
        assert (await first)[-1][0] == "done"


@pytest.mark.usefixtures("slow_first_checkpoint")
async def test_a_stop_after_the_answer_is_stored_leaves_it_answered(
    base_url: str, tenant: dict[str, str]
) -> None:
    """The run still writes its checkpoint after the answer is stored; a stop then
    cancelled it, and the client was told "stopped" about an answered turn."""
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}"
        body = {"content": "What is the basic salary?"}
        first = asyncio.create_task(sse_events(client, f"{url}/messages", body, _auth(tenant)))
        for _ in range(200):
            turns = (await client.get(url, headers=_auth(tenant))).json()["turns"]
            if turns and turns[0]["status"] == "done":
                break
            await asyncio.sleep(0.02)
        assert not first.done()
        stop = await client.post(f"{url}/stop", headers=_auth(tenant))
        events = await first
        turns = (await client.get(url, headers=_auth(tenant))).json()["turns"]
    assert stop.status_code == 200 and stop.json()["stopped"] is False
    assert events[-1][0] == "done"
    assert [t["status"] for t in turns] == ["done"]


async def test_a_stopped_answer_ends_its_stream_is_stored_failed_and_the_next_message_goes(
    base_url: str, tenant: dict[str, str], services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrag.assistant import STOPPED_TURN

    # Slow enough that the stop lands mid-answer: a bound, not a measurement.
    slow = Reply(content="Prasad Chaudhari's basic salary " * 20 + "[1].", token_delay_s=0.3)
    async with OpenAIStub() as stub, httpx.AsyncClient(timeout=30) as client:
        stub.add_rule("CURRENT QUESTION:\nWhat is the basic", slow)
        use_stub_llm(services, monkeypatch, stub.base_url)
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        stop_url = f"{base_url}/v1/conversations/{conv}/stop"
        idle = await client.post(stop_url, headers=_auth(tenant))
        assert idle.status_code == 200 and idle.json()["stopped"] is False
        names: list[str] = []
        ended: dict[str, Any] = {}
        async with client.stream(
            "POST", url, json={"content": "What is the basic salary?"}, headers=_auth(tenant)
        ) as resp:
            stopped: httpx.Response | None = None
            name = ""
            async for line in resp.aiter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                    names.append(name)
                elif line.startswith("data: ") and name == "error":
                    ended = json.loads(line[6:])
                if name == "token" and stopped is None:
                    stopped = await client.post(stop_url, headers=_auth(tenant))
        assert stopped is not None and stopped.status_code == 200, stopped
        assert stopped.json()["stopped"] is True and stopped.json()["turn_id"]
        assert "done" not in names and names[-1] == "error"
        assert ended == {"code": "stopped", "message": STOPPED_TURN}
        detail = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        turns = detail.json()["turns"]
        assert [(t["id"], t["status"], t["error"]) for t in turns] == [
            (stopped.json()["turn_id"], "failed", STOPPED_TURN)
        ]
        again = await client.post(
            url,
            json={"content": "What is John Doe's salary?"},
            headers={**_auth(tenant), "Accept": "application/json"},
        )
        assert again.status_code == 200, again.text
        missing = await client.post(
            f"{base_url}/v1/conversations/{uuid.uuid4()}/stop", headers=_auth(tenant)
        )
        assert missing.status_code == 404


async def test_documents_upload_in_the_background_and_delete_everywhere(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        files = {
            "file": (
                "policy.md",
                b"Remote work policy: staff may work remotely "
                b"three days a week with manager approval.",
            )
        }
        resp = await client.post(f"{base_url}/v1/documents", files=files, headers=_auth(tenant))
        assert resp.status_code == 202 and resp.json()["status"] == "processing"
        doc_id = resp.json()["id"]
        for _ in range(100):
            doc = (
                await client.get(f"{base_url}/v1/documents/{doc_id}", headers=_auth(tenant))
            ).json()
            if doc["status"] != "processing":
                break
            await asyncio.sleep(0.1)
        assert doc["status"] == "ready" and doc["n_chunks"] == 1
        # The file is kept as the document's original (reindex --reread reads it).
        assert [n for n, _ in await kept_originals(services, tenant["workspace"])] == ["policy.md"]
        bad = await client.post(
            f"{base_url}/v1/documents",
            headers=_auth(tenant),
            files={"file": ("deck.pptx", b"PK..")},
        )
        assert bad.status_code == 415 and "unsupported format" in bad.json()["detail"]
        empty = await client.post(
            f"{base_url}/v1/documents", headers=_auth(tenant), files={"file": ("empty.txt", b"")}
        )
        assert empty.status_code == 422 and "empty" in empty.json()["detail"]
        assert (
            await client.delete(f"{base_url}/v1/documents/{doc_id}", headers=_auth(tenant))
        ).status_code == 204
        assert (
            await client.get(f"{base_url}/v1/documents/{doc_id}", headers=_auth(tenant))
        ).status_code == 404
        assert await kept_originals(services, tenant["workspace"]) == []  # gone with it


@pytest.fixture
async def held_ingest(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[asyncio.Event]:
    """Upload ingests wait before embedding until the event yielded is set (it is set
    at teardown, so none is left waiting)."""
    release = asyncio.Event()
    embed = services.bulk.embed

    async def held(texts: Any) -> Any:
        await release.wait()
        return await embed(texts)

    monkeypatch.setattr(services.bulk, "embed", held)
    yield release
    release.set()
    await services.drain()


GHOST = "\n\n".join(
    f"Ghost paragraph {i}: the phantom gadget {i} glows purple." for i in range(300)
).encode()


async def test_deleting_a_processing_document_gets_409_and_once_ready_deletes_for_good(
    base_url: str, tenant: dict[str, str], services: Services, held_ingest: asyncio.Event
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents", files={"file": ("ghost.md", GHOST)}, headers=_auth(tenant)
        )
        assert resp.status_code == 202, resp.text
        doc_id = resp.json()["id"]
        url = f"{base_url}/v1/documents/{doc_id}"
        busy = await client.delete(url, headers=_auth(tenant))
        assert busy.status_code == 409, busy.text
        detail = busy.json()["detail"]
        assert "still processing" in detail and "once its status is ready or failed" in detail
        # The original stays while the ingest may need it (a shutdown resumes from it).
        assert await kept_originals(services, tenant["workspace"]) == [("ghost.md", GHOST)]
        held_ingest.set()
        doc = await _until_ready(client, base_url, tenant, doc_id)
        assert doc["status"] == "ready" and doc["n_chunks"] > 1
        assert services.index.chunk_ids_of_document(tenant["workspace"], doc_id)
        assert (await client.delete(url, headers=_auth(tenant))).status_code == 204
        await services.drain()
        assert (await client.get(url, headers=_auth(tenant))).status_code == 404
    assert services.index.chunk_ids_of_document(tenant["workspace"], doc_id) == []
    assert await services.db.documents.get_document(tenant["workspace"], doc_id) is None
    assert await kept_originals(services, tenant["workspace"]) == []


async def test_an_upload_keeps_one_original_a_reupload_replaces_it_and_refused_ones_leave_nothing(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    records = b'{"_id": "r-1", "text": "Lockers open at eight."}\n{"_id": "r-2", "text": "Bikes."}'
    async with httpx.AsyncClient(timeout=30) as client:
        for name, data in (
            ("handbook.md", b"Version one: lunch is at noon."),
            ("handbook.md", b"Version two: lunch is at one."),  # replaces the first
            ("handbook.md", b"Version two: lunch is at one."),  # the same again
            ("records.jsonl", records),
        ):
            resp = await client.post(
                f"{base_url}/v1/documents", files={"file": (name, data)}, headers=_auth(tenant)
            )
            assert resp.status_code == 202, resp.text
            for d in resp.json()["documents"]:
                assert (await _until_ready(client, base_url, tenant, d["id"]))["status"] == "ready"
        await services.drain()
        kept = await kept_originals(services, tenant["workspace"])
        assert kept == [
            ("handbook.md", b"Version two: lunch is at one."),
            ("records.jsonl", records),
        ]
        for name, data, code in (
            ("empty.txt", b"", 422),
            ("bad.jsonl", b'{"title": "no id"}', 422),
            ("scan.pdf", b"%PDF-1.4 not really", 422),
            ("deck.pptx", b"PK..", 415),
        ):
            resp = await client.post(
                f"{base_url}/v1/documents", files={"file": (name, data)}, headers=_auth(tenant)
            )
            assert resp.status_code == code, resp.text
    assert await kept_originals(services, tenant["workspace"]) == kept


async def test_a_one_record_jsonl_upload_is_keyed_by_its_id_and_a_reupload_replaces_the_record(
    base_url: str, tenant: dict[str, str]
) -> None:
    first = b'{"_id": "b-1", "text": "Badges are blue."}\n{"_id": "b-2", "text": "Desks are oak."}'
    again = b'{"_id": "b-1", "title": "Badges", "text": "Badges are green now."}\n'
    async with httpx.AsyncClient(timeout=30) as client:
        for data in (first, again):
            resp = await client.post(
                f"{base_url}/v1/documents",
                files={"file": ("records.jsonl", data)},
                headers=_auth(tenant),
            )
            assert resp.status_code == 202, resp.text
            for d in resp.json()["documents"]:
                await _until_ready(client, base_url, tenant, d["id"])
        assert [d["source"] for d in resp.json()["documents"]] == ["b-1"]
        assert resp.json()["title"] == "Badges"
        listed = (await client.get(f"{base_url}/v1/documents", headers=_auth(tenant))).json()
        sources = [d["source"] for d in listed[1:]]  # after the tenant's employee file
        assert sorted(sources) == ["b-1", "b-2"]  # no upload:records.jsonl, one b-1
        b1 = next(d for d in listed if d["source"] == "b-1")
        text = await client.get(f"{base_url}/v1/documents/{b1['id']}/text", headers=_auth(tenant))
        assert text.text == "Badges are green now."


async def test_every_reply_tells_browsers_not_to_sniff_its_type(
    base_url: str, tenant: dict[str, str]
) -> None:
    """A document's text is ``text/plain`` and may hold HTML: a browser must not run it."""
    async with httpx.AsyncClient() as client:
        listed = (await client.get(f"{base_url}/v1/documents", headers=_auth(tenant))).json()
        text_url = f"{base_url}/v1/documents/{listed[0]['id']}/text"
        replies = [
            await client.get(text_url, headers=_auth(tenant)),
            await client.get(f"{base_url}/healthz"),
            await client.get(f"{base_url}/v1/no-such-route", headers=_auth(tenant)),
        ]
    for reply in replies:
        assert reply.headers.get("x-content-type-options") == "nosniff", reply.url


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (
            b'{"_id": "s-1", "text": "bad \\ud800 text"}',
            "records.jsonl:2: text contains a lone surrogate",
        ),
        (
            b'{"_id": "s-1", "title": "\\udfff", "text": "x"}',
            "records.jsonl:2: title contains a lone surrogate",
        ),
        (
            b'{"_id": "upload:notes.txt", "text": "x"}',
            "records.jsonl:2: _id 'upload:notes.txt' starts with",
        ),
        (
            b'{"_id": "/srv/notes.txt", "text": "x"}',
            "records.jsonl:2: _id '/srv/notes.txt' starts with '/'",
        ),
        (
            b'{"_id": "s-1", "title": "' + b"t" * 100_000 + b'", "text": "x"}',
            "records.jsonl:2: title is 100000 characters long",
        ),
    ],
    ids=["surrogate-text", "surrogate-title", "upload-id", "path-id", "long-title"],
)
async def test_a_jsonl_record_the_stores_cannot_hold_is_refused_up_front_naming_its_line(
    base_url: str, tenant: dict[str, str], services: Services, record: bytes, problem: str
) -> None:
    data = b'{"_id": "s-0", "text": "A fine record."}\n' + record + b"\n"
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files={"file": ("records.jsonl", data)},
            headers=_auth(tenant),
        )
        listed = (await client.get(f"{base_url}/v1/documents", headers=_auth(tenant))).json()
    assert resp.status_code == 422, resp.text
    assert problem in resp.json()["detail"]
    assert len(listed) == 1  # the tenant's employee file alone: no record was stored
    assert await kept_originals(services, tenant["workspace"]) == []


async def test_a_reupload_answers_with_the_title_it_stores_not_the_previous_one(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        for heading in ("Parking rules", "Parking and bikes"):
            resp = await client.post(
                f"{base_url}/v1/documents",
                files={
                    "file": ("parking.md", f"# {heading}\n\nPark on level {len(heading)}.".encode())
                },
                headers=_auth(tenant),
            )
            assert resp.status_code == 202, resp.text
            assert resp.json()["title"] == heading
            doc = await _until_ready(client, base_url, tenant, resp.json()["id"])
            assert doc["title"] == heading


DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


async def test_a_docx_upload_is_ingested_in_the_background(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        files = {"file": ("onboarding.docx", docx_bytes(), DOCX_TYPE)}
        resp = await client.post(f"{base_url}/v1/documents", files=files, headers=_auth(tenant))
        assert resp.status_code == 202, resp.text
        doc_id = resp.json()["id"]
        for _ in range(100):
            doc = (
                await client.get(f"{base_url}/v1/documents/{doc_id}", headers=_auth(tenant))
            ).json()
            if doc["status"] != "processing":
                break
            await asyncio.sleep(0.1)
    assert doc["status"] == "ready", doc
    # One chunk per section: "Onboarding" and "After the first week".
    assert doc["title"] == "Onboarding guide" and doc["n_chunks"] == 2


async def _pdf_travel_tenant(services: Services, tmp_path: Path) -> dict[str, str]:
    """A workspace holding a two-page travel PDF (trains on page 1, hotels on page 2)."""
    workspace = f"ws-{uuid.uuid4().hex[:10]}"
    path = tmp_path / "travel.pdf"
    path.write_bytes(
        pdf_bytes(
            [
                ["Trains", "Book every train ticket through the travel desk."],
                ["Hotels", "The nightly hotel cap is 200 dollars in every city."],
            ]
        )
    )
    await ingest_documents(services, workspace, load_path(path, max_bytes=10**6))
    return {"workspace": workspace, "key": await services.db.workspaces.create_api_key(workspace)}


async def test_the_page_of_a_pdf_passage_reaches_the_sources_and_the_stored_citations(
    base_url: str, services: Services, tmp_path: Path
) -> None:
    tenant = await _pdf_travel_tenant(services, tmp_path)
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        events = await sse_events(
            client,
            f"{base_url}/v1/conversations/{conv}/messages",
            {"content": "What is the nightly hotel cap?"},
            _auth(tenant),
        )
        sources = next(data for name, data in events if name == "sources")["sources"]
        pages = {s["snippet"].split("\n")[0]: s["page"] for s in sources}
        assert pages["Hotels"] == 2 and pages.get("Trains", 1) == 1
        hotel = next(s for s in sources if s["page"] == 2)
        done = events[-1][1]
        assert "200 dollars" in done["answer"]
        assert [c["page"] for c in done["citations"] if c["source_id"] == hotel["id"]] == [2]
        stored = await client.get(
            f"{base_url}/v1/messages/{done['turn_id']}/sources", headers=_auth(tenant)
        )
    assert stored.status_code == 200
    assert [c["page"] for c in stored.json() if c["source_id"] == hotel["id"]] == [2]


async def test_delete_conversation_removes_turns_and_checkpoints(
    base_url: str, services: Services, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers={**_auth(tenant), "Accept": "application/json"},
        )
        assert (
            await client.delete(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        ).status_code == 204
        assert (
            await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        ).status_code == 404
    assert await checkpoint_count(services, conv) == 0


async def test_health_metrics_and_openapi_docs(base_url: str, tenant: dict[str, str]) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        health = await client.get(f"{base_url}/healthz")
        assert health.json() == {
            "status": "ok",
            "postgres": True,
            "milvus": True,
            "disk": True,
            "detail": None,
        }
        conv = await _conversation(client, base_url, tenant)
        await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers={**_auth(tenant), "Accept": "application/json"},
        )
        metrics = (await client.get(f"{base_url}/metrics")).text
        for name in (
            "convrag_turns_total",
            "convrag_node_latency_seconds_bucket",
            "convrag_rewrites_total",
            "convrag_retrieval_results_bucket",
        ):
            assert name in metrics
        assert "_created" not in metrics  # a creation timestamp reads as a gauge of its own
        spec = (await client.get(f"{base_url}/openapi.json")).json()
        assert "/v1/conversations/{conversation_id}/messages" in spec["paths"]
        assert (await client.get(f"{base_url}/docs")).status_code == 200


TRAVEL = """Travel policy

Meal allowances. The daily meal allowance in Europe is 60 euros, paid by Acme Travel Desk.
The daily meal allowance in North America is 75 dollars, paid by Acme Travel Desk.
The daily meal allowance in Asia is 50 dollars, paid by Acme Travel Desk.

Hotels. Book hotels through the travel desk; the nightly cap is USD 200.
"""


async def _travel_tenant(services: Services, tmp_path: Path) -> dict[str, str]:
    """A workspace with the travel policy and the employee records, and its key."""
    workspace = f"ws-{uuid.uuid4().hex[:10]}"
    for name, text in (("travel.md", TRAVEL), ("employee_data.txt", EMPLOYEES)):
        path = tmp_path / name
        path.write_text(text)
        await ingest_documents(services, workspace, load_path(path, max_bytes=10**6))
    return {"workspace": workspace, "key": await services.db.workspaces.create_api_key(workspace)}


async def test_a_follow_up_answer_is_never_replaced_by_a_less_relevant_regeneration(
    base_url: str, services: Services, tmp_path: Path
) -> None:
    tenant = await _travel_tenant(services, tmp_path)
    first, second = await _two_turns(
        base_url, tenant, "What is the meal allowance in Europe?", "And in North America?"
    )
    assert "60 euros" in first[-1][1]["answer"]
    rewrite, done = second[0][1], second[-1][1]
    assert "North America" in rewrite["query"] and "meal allowance" in rewrite["query"]
    assert "75 dollars" in done["answer"]
    assert "salary" not in done["answer"].lower()
    # The Europe sentence, said in the first answer, is not said again; should the check
    # still find the answer repetitive (every meal sentence names Acme Travel Desk), no
    # other sentence answers the question, so it stays flagged rather than replaced.
    assert "60 euros" not in done["answer"]
    assert not done["repetition_detected"] or done["flags"]["repetition_unresolved"] is True


SECURITY_POLICY = """# Acme Data Security Policy

## Backups
Production databases are backed up every 4 hours.
Backups are encrypted with AES-256 and stored in two regions.

## Contact
Questions about this policy go to the Chief Information Security Officer, Dana Whitfield.
"""


async def test_this_policy_in_a_follow_up_is_answered_from_the_policy_not_the_last_answer(
    base_url: str, services: Services, tmp_path: Path
) -> None:
    workspace = f"ws-{uuid.uuid4().hex[:10]}"
    for name, text in (("security_policy.md", SECURITY_POLICY), ("employee_data.txt", EMPLOYEES)):
        path = tmp_path / name
        path.write_text(text)
        await ingest_documents(services, workspace, load_path(path, max_bytes=10**6))
    tenant = {"workspace": workspace, "key": await services.db.workspaces.create_api_key(workspace)}
    first, second = await _two_turns(
        base_url, tenant, "How often are backups made?", "Who do I contact about this policy?"
    )
    assert "every 4 hours" in first[-1][1]["answer"]
    rewrite, done = second[0][1], second[-1][1]
    # Not "... (How often are backups made?)": the previous question would pick the answer.
    # (The rule that put the cited title in its place fired on no measured follow-up and
    # went; the raw and history queries find the policy's contact.)
    assert "backups" not in rewrite["query"]
    assert "Dana Whitfield" in done["answer"] and "every 4 hours" not in done["answer"]


async def test_odd_id_spellings_are_404_and_an_upper_case_id_is_the_same_conversation(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        for spelling in (
            f"urn:uuid:{conv}",
            f"{conv}}}",
            f"-{conv}",
            f"{{{conv}}}",
            conv.replace("-", ""),
        ):
            for path in (
                f"/v1/conversations/{spelling}",
                f"/v1/messages/{spelling}/sources",
                f"/v1/documents/{spelling}",
            ):
                resp = await client.get(f"{base_url}{path}", headers=_auth(tenant))
                assert resp.status_code == 404, (path, resp.status_code, resp.text)
        upper = await client.get(
            f"{base_url}/v1/conversations/{conv.upper()}", headers=_auth(tenant)
        )
        assert upper.status_code == 200 and upper.json()["conversation_id"] == conv


async def test_a_message_to_an_unknown_conversation_is_404_and_creates_nothing(
    base_url: str, tenant: dict[str, str]
) -> None:
    unknown = str(uuid.uuid4())
    url = f"{base_url}/v1/conversations/{unknown}/messages"
    async with httpx.AsyncClient(timeout=30) as client:
        for accept in ("text/event-stream", "application/json"):
            resp = await client.post(
                url, json={"content": "hi"}, headers={**_auth(tenant), "Accept": accept}
            )
            assert resp.status_code == 404, (accept, resp.text)
            assert f"conversation {unknown} not found" in resp.json()["detail"]
        read = await client.get(f"{base_url}/v1/conversations/{unknown}", headers=_auth(tenant))
        assert read.status_code == 404


async def test_out_of_domain_questions_and_deleted_documents_get_not_found(
    base_url: str, services: Services, tmp_path: Path
) -> None:
    tenant = await _travel_tenant(services, tmp_path)
    ask = {"Accept": "application/json", **_auth(tenant)}
    async with httpx.AsyncClient(timeout=30) as client:

        async def answer(question: str) -> dict[str, Any]:
            conv = await _conversation(client, base_url, tenant)
            url = f"{base_url}/v1/conversations/{conv}/messages"
            resp = await client.post(url, json={"content": question}, headers=ask)
            assert resp.status_code == 200, resp.text
            return dict(resp.json())

        for question in (
            "What is the capital of France?",
            "Who won the 2018 World Cup?",
            "Where do staff park?",
        ):
            reply = await answer(question)
            assert reply["no_answer"] is True and reply["citations"] == []
            assert reply["answer"] == services.settings.no_answer_text
        found = await answer("What is the daily meal allowance in Asia?")
        assert found["no_answer"] is False and "50 dollars" in found["answer"]
        earlier = await _conversation(client, base_url, tenant)
        earlier_url = f"{base_url}/v1/conversations/{earlier}/messages"
        asia = {"content": "What is the daily meal allowance in Asia?"}
        before = await client.post(earlier_url, json=asia, headers=ask)
        assert "50 dollars" in before.json()["answer"]
        docs = (await client.get(f"{base_url}/v1/documents", headers=_auth(tenant))).json()
        travel = next(d["id"] for d in docs if d["source"].endswith("travel.md"))
        deleted = await client.delete(f"{base_url}/v1/documents/{travel}", headers=_auth(tenant))
        assert deleted.status_code == 204
        gone = await answer("What is the daily meal allowance in Asia?")
        assert gone["no_answer"] is True and "50 dollars" not in gone["answer"]
        # A follow-up to an answer from the deleted document is about it too; the salary
        # records that remain say "Allowances" and "salary".
        question = {"content": "Is it part of the salary?"}
        follow = (await client.post(earlier_url, json=question, headers=ask)).json()
        assert follow["no_answer"] is True and follow["citations"] == [], follow
        # After that "not found", "it" is left unresolved: the question is searched (and
        # shown) as typed, beside the history query that carries the topic, never a glued
        # string. (It is then answered from the records with low confidence: NOTES.md.)
        question = {"content": "Is it paid with the salary?"}
        follow = (await client.post(earlier_url, json=question, headers=ask)).json()
        assert follow["rewritten_query"] == "Is it paid with the salary?"


@pytest.fixture
async def unknowing_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAIStub]:
    """An LLM that finds no answer in the sources: it replies the "not found" sentence
    the system message tells it to reply alone."""

    def not_found(system: str) -> str:
        told = re.search(r"nothing else: (.+?)\n", system)
        assert told is not None, system
        return f'"{told.group(1)}"'

    async with _answering_llm(services, monkeypatch, not_found) as stub:
        yield stub


async def test_an_llm_that_finds_no_answer_in_the_sources_marks_the_turn_not_found(
    base_url: str, services: Services, tenant: dict[str, str], unknowing_llm: OpenAIStub
) -> None:
    question = "What is Prasad Chaudhari's salary?"
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        events = await sse_events(
            client,
            f"{base_url}/v1/conversations/{conv}/messages",
            {"content": question},
            _auth(tenant),
        )
        completion = await client.post(
            f"{base_url}/v1/chat/completions",
            json={"model": "convrag", "messages": [{"role": "user", "content": question}]},
            headers=_auth(tenant),
        )
        stored = (
            await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        ).json()["turns"][-1]
    done = next(data for name, data in events if name == "done")
    assert unknowing_llm.requests, "the LLM answered"
    assert done["no_answer"] is True and done["citations"] == []
    assert services.settings.no_answer_text in done["answer"]
    assert stored["no_answer"] is True
    assert completion.status_code == 200 and completion.json()["no_answer"] is True


async def test_models_lists_convrag_for_openai_compatible_clients(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        listed = await client.get(f"{base_url}/v1/models", headers=_auth(tenant))
        anonymous = await client.get(f"{base_url}/v1/models")
    assert listed.status_code == 200
    assert [m["id"] for m in listed.json()["data"]] == ["convrag"]
    assert anonymous.status_code == 401


async def test_malformed_json_is_named_as_such_not_as_a_field(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        resp = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            content=b'{"content": "hi",,}',
            headers={"content-type": "application/json", **_auth(tenant)},
        )
    assert resp.status_code == 422
    detail = resp.json()["detail"]
    assert detail.startswith("body: the body is not valid JSON at character 17: Expecting")
    assert resp.json()["errors"][0]["field"] == ""


async def test_web_search_on_without_a_serper_key_is_refused_with_the_fix(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        resp = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "Any news?", "rag": {"web_search": "on"}},
            headers=_auth(tenant),
        )
    assert resp.status_code == 422 and "SERPER_API_KEY" in resp.json()["detail"]


def _gzip_bomb(mib: int) -> bytes:
    """``mib`` MiB of zero bytes as a .jsonl.gz (about 1 kB per MiB), gzipped piece by piece."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as gz:
        for _ in range(mib):
            gz.write(b"\x00" * 2**20)
    return out.getvalue()


async def test_a_gzip_bomb_upload_gets_422_naming_the_decompressed_limit(
    base_url: str, tenant: dict[str, str], services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        services,
        "settings",
        services.settings.model_copy(update={"max_decompressed_bytes": 2**20}),
    )
    bomb = _gzip_bomb(256)  # about 260 kB that expands to 256 MiB
    assert len(bomb) < services.settings.max_file_bytes
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files={"file": ("bomb.jsonl.gz", bomb, "application/gzip")},
            headers=_auth(tenant),
        )
        listed = await client.get(f"{base_url}/v1/documents", headers=_auth(tenant))
    assert resp.status_code == 422, resp.text
    detail = resp.json()["detail"]
    assert "bomb.jsonl.gz" in detail and "1.0 MiB limit" in detail
    assert "MAX_DECOMPRESSED_BYTES" in detail
    assert all(d["title"] != "bomb" for d in listed.json())


async def test_an_upload_whose_reader_process_dies_gets_422_not_500(
    base_url: str, tenant: dict[str, str], services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrag.embeddings import ChildDied

    async def dies(*_: object, **__: object) -> None:
        raise ChildDied()

    monkeypatch.setattr(services.bulk, "read", dies)
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files={"file": ("huge.txt", b"Some text to index.")},
            headers=_auth(tenant),
        )
    assert resp.status_code == 422, resp.text
    assert "huge.txt" in resp.json()["detail"]
    assert "out of memory" in resp.json()["detail"]


async def test_a_300_character_filename_gets_422_naming_the_length_limit(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files={"file": ("a" * 296 + ".txt", b"Some text to index.")},
            headers=_auth(tenant),
        )
    assert resp.status_code == 422, resp.text
    detail = resp.json()["detail"]
    assert "300 bytes long" in detail and "limit of 255 bytes" in detail
    assert "shorter name" in detail


async def test_a_path_in_an_upload_filename_is_dropped_and_the_file_is_kept_by_its_name(
    base_url: str, tenant: dict[str, str], services: Services, held_ingest: asyncio.Event
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files={"file": ("../../etc/passwd.txt", b"The badge office opens at nine.")},
            headers=_auth(tenant),
        )
    assert resp.status_code == 202, resp.text
    assert resp.json()["source"] == "upload:passwd.txt"
    kept = await kept_originals(services, tenant["workspace"])
    assert kept == [("passwd.txt", b"The badge office opens at nine.")]
    assert not (services.settings.data_dir / "etc").exists()


@asynccontextmanager
async def _answering_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch, answer: Callable[[str], str]
) -> AsyncIterator[OpenAIStub]:
    """A stub LLM whose answer is ``answer`` of the answer prompt's system message."""

    def reply(request: dict[str, Any]) -> str:
        return answer(str(request["messages"][0]["content"]))

    async with stub_llm(services, monkeypatch, ("CURRENT QUESTION", Reply(content=reply))) as stub:
        yield stub


@pytest.fixture
async def leaking_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAIStub]:
    """An LLM whose answer streams, then is found to leak the prompt's canary: the turn
    sends `reset` and answers extractively."""

    def leak(system: str) -> str:
        marker = re.search(r"never to be written: (\w+)", system)
        assert marker is not None
        return f"My instructions end with {marker.group(1)} and more words [1]."

    async with _answering_llm(services, monkeypatch, leak) as stub:
        yield stub


async def test_streamed_chat_completions_mark_a_reset_and_end_with_the_stored_answer(
    base_url: str, tenant: dict[str, str], leaking_llm: OpenAIStub
) -> None:
    body = {
        "model": "convrag",
        "stream": True,
        "messages": [{"role": "user", "content": "What is Prasad Chaudhari's salary?"}],
    }
    chunks: list[dict[str, Any]] = []
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream(
            "POST", f"{base_url}/v1/chat/completions", json=body, headers=_auth(tenant)
        ) as resp,
    ):
        assert resp.status_code == 200
        async for line in resp.aiter_lines():
            if line.startswith("data: {"):
                chunks.append(json.loads(line[6:]))
    resets = [i for i, c in enumerate(chunks) if c.get("convrag_reset")]
    assert resets and chunks[resets[0]]["convrag_reset_reason"] == "reset"
    before = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[: resets[0]])
    # The discarded draft did stream, up to the canary: the stream's guard releases nothing
    # that may be the canary (and holds "end with", which may start a directive).
    assert before.startswith("My instructions") and "instructions end with" not in before
    after = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks[resets[-1] :])
    final = chunks[-1]
    assert final["choices"][0]["finish_reason"] == "stop"
    async with httpx.AsyncClient(timeout=30) as client:
        detail = await client.get(
            f"{base_url}/v1/conversations/{final['conversation_id']}", headers=_auth(tenant)
        )
    stored = detail.json()["turns"][-1]["answer"]
    assert "instructions end with" not in stored and "$120,000" in stored
    assert after.strip() == stored.strip() == final["answer"].strip()


async def test_a_non_streamed_chat_completion_after_a_reset_is_the_stored_answer(
    base_url: str, tenant: dict[str, str], leaking_llm: OpenAIStub
) -> None:
    body = {
        "model": "convrag",
        "messages": [{"role": "user", "content": "What is Prasad Chaudhari's salary?"}],
    }
    async with httpx.AsyncClient(timeout=30) as client:
        reply = await client.post(
            f"{base_url}/v1/chat/completions", json=body, headers=_auth(tenant)
        )
        data = reply.json()
        detail = await client.get(
            f"{base_url}/v1/conversations/{data['conversation_id']}", headers=_auth(tenant)
        )
    content = data["choices"][0]["message"]["content"]
    assert "instructions end with" not in content
    assert content == detail.json()["turns"][-1]["answer"]


def late_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AbstractAsyncContextManager[OpenAIStub]:
    """A stub LLM (:func:`~tests.conftest.stub_llm`) that takes a second to the first
    token of each answer."""
    reply = Reply(content="Prasad Chaudhari's salary is $120,000 [1].", first_token_delay_s=1.0)
    return stub_llm(services, monkeypatch, ("CURRENT QUESTION", reply))


@pytest.fixture
async def stalling_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAIStub]:
    """An LLM that takes a second to its first token, and keep-alives every 0.2 s."""
    async with late_llm(services, monkeypatch) as stub:
        monkeypatch.setattr(
            services, "settings", services.settings.model_copy(update={"sse_keepalive_s": 0.2})
        )
        yield stub


async def test_a_slow_first_token_is_preceded_by_sse_keep_alive_comments(
    base_url: str, tenant: dict[str, str], stalling_llm: OpenAIStub
) -> None:
    question = "What is Prasad Chaudhari's salary?"
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        lines: list[str] = []
        async with client.stream(
            "POST",
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": question},
            headers=_auth(tenant),
        ) as resp:
            assert resp.status_code == 200
            lines = [line async for line in resp.aiter_lines()]
        first_token = lines.index("event: token")
        assert ": keep-alive" in lines[:first_token]
        assert "event: done" in lines

        body = {
            "model": "convrag",
            "stream": True,
            "messages": [{"role": "user", "content": question}],
        }
        async with client.stream(
            "POST", f"{base_url}/v1/chat/completions", json=body, headers=_auth(tenant)
        ) as resp:
            assert resp.status_code == 200
            lines = [line async for line in resp.aiter_lines() if line]
    first_content = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("data: {") and json.loads(line[6:])["choices"][0]["delta"].get("content")
    )
    assert ": keep-alive" in lines[:first_content]
    assert lines[-1] == "data: [DONE]"


async def _ask(
    client: httpx.AsyncClient, base: str, tenant: dict[str, str], conv: str, q: str
) -> str:
    """The turn id of a question answered in ``conv`` (as one JSON reply)."""
    resp = await client.post(
        f"{base}/v1/conversations/{conv}/messages",
        json={"content": q},
        headers={**_auth(tenant), "Accept": "application/json"},
    )
    assert resp.status_code == 200, resp.text
    return str(resp.json()["turn_id"])


async def _until_ready(
    client: httpx.AsyncClient, base: str, tenant: dict[str, str], doc_id: str
) -> dict[str, Any]:
    for _ in range(200):
        doc = (await client.get(f"{base}/v1/documents/{doc_id}", headers=_auth(tenant))).json()
        if doc["status"] != "processing":
            return dict(doc)
        await asyncio.sleep(0.1)
    raise AssertionError(f"document {doc_id} still processing")


async def test_conversations_are_listed_by_last_activity_with_titles_and_cursor_pages(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        convs = [await _conversation(client, base_url, tenant) for _ in range(3)]
        await _ask(client, base_url, tenant, convs[0], "  What is Prasad Chaudhari's salary? ")
        url = f"{base_url}/v1/conversations"
        first = await client.get(url, params={"limit": 2}, headers=_auth(tenant))
        assert first.status_code == 200, first.text
        page = first.json()
        top = page["conversations"][0]
        assert top["id"] == convs[0]  # its turn made it the most recently active
        assert top["title"] == "What is Prasad Chaudhari's salary?" and top["turn_count"] == 1
        assert top["updated_at"] >= top["created_at"]
        assert page["next_cursor"]
        second = await client.get(
            url, params={"limit": 2, "cursor": page["next_cursor"]}, headers=_auth(tenant)
        )
        rest = second.json()
        assert rest["next_cursor"] is None and len(rest["conversations"]) == 1
        listed = [c["id"] for c in page["conversations"] + rest["conversations"]]
        assert sorted(listed) == sorted(convs)
        assert (await client.get(url, headers=_auth(tenant))).json()["next_cursor"] is None


async def test_a_malformed_cursor_or_limit_gets_422_naming_the_parameter(
    base_url: str, tenant: dict[str, str], services: Services, tmp_path: Path
) -> None:
    other = await _travel_tenant(services, tmp_path)  # two documents: a documents cursor
    async with httpx.AsyncClient(timeout=30) as client:
        docs = await client.get(
            f"{base_url}/v1/documents", params={"limit": 1}, headers=_auth(other)
        )
        documents_cursor = docs.headers["X-Next-Cursor"]
        for path in ("/v1/conversations", "/v1/documents"):
            for params, field in (
                ({"cursor": "not a cursor!"}, "query.cursor"),
                ({"cursor": "e30"}, "query.cursor"),  # base64 of "{}"
                ({"limit": 0}, "query.limit"),
                ({"limit": 101}, "query.limit"),
                ({"limit": "ten"}, "query.limit"),
            ):
                r = await client.get(f"{base_url}{path}", params=params, headers=_auth(tenant))
                assert r.status_code == 422, (path, params, r.text)
                assert r.json()["errors"][0]["field"] == field
                assert field in r.json()["detail"]
        wrong_list = await client.get(
            f"{base_url}/v1/conversations",
            params={"cursor": documents_cursor},
            headers=_auth(tenant),
        )
    assert wrong_list.status_code == 422
    assert "cursor of documents, not of conversations" in wrong_list.json()["detail"]


async def test_renaming_a_conversation_lists_it_under_the_stripped_title(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}"
        renamed = await client.patch(url, json={"title": "  Salaries  "}, headers=_auth(tenant))
        assert renamed.status_code == 200, renamed.text
        assert renamed.json()["title"] == "Salaries" and renamed.json()["id"] == conv
        listed = (await client.get(f"{base_url}/v1/conversations", headers=_auth(tenant))).json()
        assert {"id": conv, "title": "Salaries"}.items() <= listed["conversations"][0].items()
        for body, problem in (
            ({"title": "   "}, "at least 1 character"),
            ({"title": "x" * 201}, "at most 200 characters"),
            ({"title": "two\nlines"}, "control characters"),
            ({"title": "nul\u0000"}, "control characters"),
            ({}, "Field required"),
            ({"title": "ok", "color": "red"}, "Extra inputs"),
        ):
            r = await client.patch(url, json=body, headers=_auth(tenant))
            assert r.status_code == 422, (body, r.text)
            assert problem in r.json()["detail"]
            assert r.json()["errors"][0]["field"] in ("title", "color")


async def test_feedback_on_an_answer_is_replaced_counted_and_shown_with_its_turn(
    base_url: str, tenant: dict[str, str]
) -> None:
    def counted(metrics: str, rating: str) -> float:
        line = next(
            m
            for m in metrics.splitlines()
            if m.startswith(f'convrag_feedback_total{{rating="{rating}"}}')
        )
        return float(line.split()[-1])

    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        turn = await _ask(client, base_url, tenant, conv, "What is John Doe's basic salary?")
        url = f"{base_url}/v1/messages/{turn}/feedback"
        before = (await client.get(f"{base_url}/metrics")).text
        up = await client.post(url, json={"rating": "up"}, headers=_auth(tenant))
        assert up.status_code == 200, up.text
        assert up.json()["rating"] == "up" and up.json()["comment"] is None
        down = await client.post(
            url, json={"rating": "down", "comment": " Wrong person. "}, headers=_auth(tenant)
        )
        assert down.json()["rating"] == "down" and down.json()["comment"] == "Wrong person."
        after = (await client.get(f"{base_url}/metrics")).text
        assert counted(after, "up") == counted(before, "up") + 1
        assert counted(after, "down") == counted(before, "down") + 1
        detail = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        feedback = detail.json()["turns"][0]["feedback"]
        assert feedback["rating"] == "down" and feedback["comment"] == "Wrong person."
        for body, field in (
            ({"rating": "meh"}, "rating"),
            ({}, "rating"),
            ({"rating": "up", "comment": "x" * 2001}, "comment"),
            ({"rating": "up", "comment": "nul\u0000"}, "comment"),
        ):
            r = await client.post(url, json=body, headers=_auth(tenant))
            assert r.status_code == 422 and r.json()["errors"][0]["field"] == field, r.text
        unknown = await client.post(
            f"{base_url}/v1/messages/{uuid.uuid4()}/feedback",
            json={"rating": "up"},
            headers=_auth(tenant),
        )
        assert unknown.status_code == 404 and "message" in unknown.json()["detail"]
        assert counted((await client.get(f"{base_url}/metrics")).text, "up") == counted(after, "up")


async def test_an_export_holds_every_turn_with_its_citations_as_json_and_markdown(
    base_url: str, services: Services, tmp_path: Path
) -> None:
    tenant = await _pdf_travel_tenant(services, tmp_path)
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        await _ask(client, base_url, tenant, conv, "What is the nightly hotel cap?")
        await _ask(client, base_url, tenant, conv, "How are train tickets booked?")
        url = f"{base_url}/v1/conversations/{conv}/export"
        exported = await client.get(url, headers=_auth(tenant))
        assert exported.status_code == 200, exported.text
        assert f"conversation-{conv}.json" in exported.headers["content-disposition"]
        data = exported.json()
        assert data["conversation"]["title"] == "What is the nightly hotel cap?"
        assert data["conversation"]["turn_count"] == 2
        first, second = data["turns"]
        assert first["question"] == "What is the nightly hotel cap?"
        assert "200 dollars" in first["answer"]
        hotel = next(c for c in first["citations"] if c["page"] == 2)
        assert hotel["marker"] in first["answer"] and hotel["title"] == "travel"
        assert hotel["document_id"] and "200 dollars" in hotel["snippet"]
        assert second["citations"]
        markdown = await client.get(url, params={"format": "md"}, headers=_auth(tenant))
        assert markdown.status_code == 200
        assert markdown.headers["content-type"] == "text/markdown; charset=utf-8"
        md = markdown.text
        assert md.startswith("# What is the nightly hotel cap?\n")
        assert "## 1. What is the nightly hotel cap?" in md
        assert "## 2. How are train tickets booked?" in md
        answer_at = md.index(first["answer"])
        sources_at = md.index("**Sources**", answer_at)
        assert md.index("\n- [", sources_at) < md.index("## 2.")
        assert "\n1. [" not in md  # listed by marker, not renumbered
        assert f"{hotel['marker']} **travel** (page 2, document `{hotel['document_id']}`)" in md
        bad = await client.get(url, params={"format": "pdf"}, headers=_auth(tenant))
        assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "query.format"
        assert "'json' or 'md'" in bad.json()["detail"]


async def test_a_reloaded_conversation_flags_not_found_and_repetition_as_streamed(
    base_url: str, services: Services, tmp_path: Path
) -> None:
    tenant = await _travel_tenant(services, tmp_path)
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        streamed = [
            (await sse_events(client, url, {"content": q}, _auth(tenant)))[-1][1]
            for q in (
                "What is Prasad Chaudhari's salary?",
                "What about her basic salary?",  # the same record again: a repetition
                "What is the capital of France?",
            )
        ]
        assert [d["no_answer"] for d in streamed] == [False, False, True]
        assert streamed[1]["repetition_detected"] and streamed[1]["flags"]["repetition_unresolved"]
        read = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        export_url = f"{base_url}/v1/conversations/{conv}/export"
        exported = await client.get(export_url, headers=_auth(tenant))
        md = (await client.get(export_url, params={"format": "md"}, headers=_auth(tenant))).text
    for reloaded in (read.json()["turns"], exported.json()["turns"]):
        for turn, done in zip(reloaded, streamed, strict=True):
            assert turn["id"] == done["turn_id"]
            assert turn["no_answer"] == done["no_answer"]
            assert turn["confidence"] == done["confidence"] in ("high", "low")
            assert turn["repetition_detected"] == done["repetition_detected"]
            assert turn["flags"] == done["flags"]
    second, third = md.split("## 2. ")[1].split("## 3. ")
    assert "_Could not avoid repeating information from an earlier answer._" in second
    assert "_Not found in the workspace's documents._" in third
    assert "_Not found" not in second and "repeating" not in third


async def test_a_documents_text_is_its_chunks_joined_and_reads_in_character_ranges(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    sentences = [f"Rule {i}: desks on floor {i % 5} are cleaned on day {i % 7}." for i in range(80)]
    text = "\n\n".join(" ".join(sentences[i : i + 4]) for i in range(0, 80, 4))
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files={"file": ("cleaning.md", text.encode())},
            headers=_auth(tenant),
        )
        doc = await _until_ready(client, base_url, tenant, resp.json()["id"])
        assert doc["status"] == "ready" and doc["n_chunks"] > 1
        url = f"{base_url}/v1/documents/{doc['id']}/text"
        whole = await client.get(url, headers=_auth(tenant))
        assert whole.status_code == 200
        assert whole.headers["content-type"] == "text/plain; charset=utf-8"
        assert " ".join(whole.text.split()) == " ".join(text.split())
        total = int(whole.headers["X-Total-Chars"])
        assert total == len(whole.text) and "X-Next-Offset" not in whole.headers
        part = await client.get(url, params={"offset": 10, "limit": 25}, headers=_auth(tenant))
        assert part.text == whole.text[10:35] and part.headers["X-Next-Offset"] == "35"
        end = await client.get(url, params={"offset": total}, headers=_auth(tenant))
        assert end.status_code == 200 and end.text == ""
        for params, field in (
            ({"offset": total + 1}, "query.offset"),
            ({"offset": -1}, "query.offset"),
            ({"limit": 0}, "query.limit"),
        ):
            r = await client.get(url, params=params, headers=_auth(tenant))
            assert r.status_code == 422 and r.json()["errors"][0]["field"] == field, r.text
        assert (
            "past the end of the text"
            in (await client.get(url, params={"offset": total + 1}, headers=_auth(tenant))).json()[
                "detail"
            ]
        )
        failed_id = str(uuid.uuid4())
        await services.db.documents.upsert_document_status(
            tenant["workspace"], failed_id, "broken.md", status="failed", error="bad bytes"
        )
        failed = await client.get(
            f"{base_url}/v1/documents/{failed_id}/text", headers=_auth(tenant)
        )
        assert failed.status_code == 409 and "failed: bad bytes" in failed.json()["detail"]
        unknown = await client.get(
            f"{base_url}/v1/documents/{uuid.uuid4()}/text", headers=_auth(tenant)
        )
        assert unknown.status_code == 404


async def test_documents_page_by_link_and_x_next_cursor_headers_with_a_list_body(
    base_url: str, services: Services, tmp_path: Path
) -> None:
    tenant = await _travel_tenant(services, tmp_path)
    async with httpx.AsyncClient(timeout=30) as client:
        whole = await client.get(f"{base_url}/v1/documents", headers=_auth(tenant))
        assert len(whole.json()) == 2 and "Link" not in whole.headers
        first = await client.get(
            f"{base_url}/v1/documents", params={"limit": 1}, headers=_auth(tenant)
        )
        assert isinstance(first.json(), list) and len(first.json()) == 1
        link = re.fullmatch(r'<([^>]+)>; rel="next"', first.headers["Link"])
        assert link is not None and first.headers["X-Next-Cursor"] in link.group(1)
        second = await client.get(link.group(1), headers=_auth(tenant))
        assert len(second.json()) == 1 and "X-Next-Cursor" not in second.headers
    assert [d["id"] for d in first.json() + second.json()] == [d["id"] for d in whole.json()]


@pytest.mark.parametrize("gz", [False, True], ids=["jsonl", "jsonl.gz"])
async def test_a_jsonl_upload_answers_with_every_document_it_created(
    base_url: str, tenant: dict[str, str], gz: bool
) -> None:
    records = [
        {"_id": f"faq-{i}", "title": f"FAQ {i}", "text": f"Answer number {i} is about parking."}
        for i in range(3)
    ]
    data = "\n".join(json.dumps(r) for r in records).encode()
    name = "faq.jsonl.gz" if gz else "faq.jsonl"
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files={"file": (name, gzip.compress(data) if gz else data)},
            headers=_auth(tenant),
        )
        assert resp.status_code == 202, resp.text
        body = resp.json()
        assert [d["source"] for d in body["documents"]] == ["faq-0", "faq-1", "faq-2"]
        assert body["n_documents"] == 3
        assert body["id"] == body["documents"][0]["id"] and body["title"] == "FAQ 0"
        assert {d["status"] for d in body["documents"]} == {"processing"}
        for d in body["documents"]:
            assert (await _until_ready(client, base_url, tenant, d["id"]))["status"] == "ready"


async def test_a_large_jsonl_upload_lists_its_first_documents_and_counts_them_all(
    base_url: str, tenant: dict[str, str]
) -> None:
    from convrag.api.schemas import UPLOAD_LISTED

    n = UPLOAD_LISTED + 5
    data = "\n".join(
        json.dumps({"_id": f"many-{i}", "text": f"Record {i} is about lockers."}) for i in range(n)
    )
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files={"file": ("many.jsonl", data.encode())},
            headers=_auth(tenant),
        )
    assert resp.status_code == 202, resp.text
    body = resp.json()
    assert body["n_documents"] == n and len(body["documents"]) == UPLOAD_LISTED
    assert body["documents"][0]["source"] == "many-0"


@pytest.fixture
async def counting_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAIStub]:
    """An LLM that answers and reports its token usage, as OpenAI does."""
    reply = Reply(content="Prasad Chaudhari's salary is $120,000 [1].")
    async with stub_llm(services, monkeypatch, ("CURRENT QUESTION", reply)) as stub:
        yield stub


async def test_chat_completion_usage_is_the_tokens_the_llm_reported(
    base_url: str, tenant: dict[str, str], counting_llm: OpenAIStub
) -> None:
    question = [{"role": "user", "content": "What is Prasad Chaudhari's salary?"}]
    async with httpx.AsyncClient(timeout=30) as client:
        reply = await client.post(
            f"{base_url}/v1/chat/completions",
            json={"model": "convrag", "messages": question},
            headers=_auth(tenant),
        )
        usage = reply.json()["usage"]
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        body = {
            "model": "convrag",
            "messages": question,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        async with client.stream(
            "POST", f"{base_url}/v1/chat/completions", json=body, headers=_auth(tenant)
        ) as resp:
            chunks = [
                json.loads(line[6:])
                async for line in resp.aiter_lines()
                if line.startswith("data: {")
            ]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == usage
    assert all("usage" not in c for c in chunks[:-1])


async def test_chat_completion_usage_is_zero_without_an_llm(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        reply = await client.post(
            f"{base_url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "What is John Doe's salary?"}]},
            headers=_auth(tenant),
        )
    assert reply.json()["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


NEW_ROUTES = {
    ("get", "/v1/conversations"): {422},
    ("patch", "/v1/conversations/{conversation_id}"): {404, 422},
    ("get", "/v1/conversations/{conversation_id}/export"): {404, 422},
    ("post", "/v1/messages/{message_id}/feedback"): {404, 422},
    ("get", "/v1/documents/{document_id}/text"): {404, 409, 422},
    ("get", "/v1/documents"): {422},
}
#: Every route the everyday API added (the matrix of
#: ``test_another_workspaces_ids_give_404_on_every_route`` tries each with another key).
EVERYDAY_ROUTES = {*NEW_ROUTES, ("get", "/v1/models")}


async def test_the_new_routes_document_their_4xx_answers_in_openapi(base_url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        spec = (await client.get(f"{base_url}/openapi.json")).json()
    assert all(method in spec["paths"].get(path, {}) for method, path in EVERYDAY_ROUTES)
    for (method, path), codes in NEW_ROUTES.items():
        responses = spec["paths"][path][method]["responses"]
        assert {str(c) for c in codes} <= set(responses), (method, path, sorted(responses))
        for code in codes:
            schema = responses[str(code)]["content"]["application/json"]["schema"]["$ref"]
            assert schema.endswith("ValidationErrorOut" if code == 422 else "ErrorOut")
    export = spec["paths"]["/v1/conversations/{conversation_id}/export"]["get"]
    assert "text/markdown" in export["responses"]["200"]["content"]


async def _turn_rows(services: Services, conv: str) -> list[dict[str, Any]]:
    """Every stored turn of ``conv``, whatever its status."""
    async with services.db.pool.connection() as conn:
        return list(
            await (
                await conn.execute(
                    "SELECT id::text AS id, status, idempotency_key FROM conversation_turns "
                    "WHERE conversation_id = %s ORDER BY turn_number",
                    (conv,),
                )
            ).fetchall()
        )


async def test_a_retried_post_with_the_same_idempotency_key_is_the_same_turn_stored_once(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        body = {"content": "What is John Doe's basic salary?"}
        headers = {**_auth(tenant), "Accept": "application/json", "Idempotency-Key": "msg-1"}
        first = await client.post(url, json=body, headers=headers)
        assert first.status_code == 200, first.text
        retry = await client.post(url, json=body, headers=headers)
        assert retry.status_code == 200
        assert retry.json()["turn_id"] == first.json()["turn_id"]
        assert retry.json()["answer"] == first.json()["answer"]
        assert retry.json()["citations"] == first.json()["citations"]
        # The same key in the body, over SSE: one `done` event from the stored turn.
        events = await sse_events(
            client, url, {**body, "client_message_id": "msg-1"}, _auth(tenant)
        )
        assert [n for n, _ in events] == ["done"]
        assert events[0][1]["turn_id"] == first.json()["turn_id"]
        assert events[0][1]["answer"] == first.json()["answer"]
        assert events[0][1]["citations"] == first.json()["citations"]
        rows = await _turn_rows(services, conv)
        assert [(r["id"], r["status"], r["idempotency_key"]) for r in rows] == [
            (first.json()["turn_id"], "done", "msg-1")
        ]
        # Another key is another turn.
        other = await client.post(url, json=body, headers={**headers, "Idempotency-Key": "msg-2"})
        assert other.status_code == 200 and other.json()["turn_id"] != first.json()["turn_id"]
        assert len(await _turn_rows(services, conv)) == 2


async def test_a_keyed_message_sent_twice_at_once_is_answered_once(
    base_url: str, tenant: dict[str, str], services: Services, slow_llm: OpenAIStub
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        body = {"content": "What is the basic salary?"}
        headers = {**_auth(tenant), "Accept": "application/json", "Idempotency-Key": "k"}
        first = asyncio.create_task(client.post(url, json=body, headers=headers))
        await asyncio.sleep(0.5)
        rows = await _turn_rows(services, conv)
        assert [r["status"] for r in rows] == ["processing"]  # in flight, question stored
        second = await client.post(url, json=body, headers=headers)
        done = await first
        assert done.status_code == 200 and second.status_code == 200
        assert second.json()["turn_id"] == done.json()["turn_id"] == rows[0]["id"]
        assert second.json()["answer"] == done.json()["answer"]
        assert [r["status"] for r in await _turn_rows(services, conv)] == ["done"]


async def test_a_bad_idempotency_key_gets_422_naming_it(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        body = {"content": "Hello?"}
        long = await client.post(
            url, json=body, headers={**_auth(tenant), "Idempotency-Key": "k" * 201}
        )
        assert long.status_code == 422 and "Idempotency-Key" in long.json()["detail"]
        in_body = await client.post(
            url, json={**body, "client_message_id": "k" * 201}, headers=_auth(tenant)
        )
        assert in_body.status_code == 422 and "client_message_id" in in_body.json()["detail"]
        differ = await client.post(
            url,
            json={**body, "client_message_id": "a"},
            headers={**_auth(tenant), "Idempotency-Key": "b"},
        )
        assert differ.status_code == 422 and "differ" in differ.json()["detail"]


async def test_a_failed_turn_is_stored_as_failed_and_its_key_runs_again(
    base_url: str, tenant: dict[str, str], services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    drafting = importlib.import_module("convrag.nodes._drafting")
    real = drafting.extract_entities

    def broken(text: str) -> list[str]:
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(drafting, "extract_entities", broken)
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        body = {"content": "What is John Doe's basic salary?", "client_message_id": "m"}
        headers = {**_auth(tenant), "Accept": "application/json"}
        failed = await client.post(url, json=body, headers=headers)
        assert failed.status_code == 503
        [row] = await _turn_rows(services, conv)
        turn = await services.db.turns.get_turn(tenant["workspace"], conv, row["id"])
        assert turn is not None and turn.status == "failed"
        assert turn.error == "RuntimeError: simulated failure"
        monkeypatch.setattr(drafting, "extract_entities", real)
        again = await client.post(url, json=body, headers=headers)
        assert again.status_code == 200 and again.json()["turn_id"] == row["id"]
        assert [r["status"] for r in await _turn_rows(services, conv)] == ["done"]
        # Another workspace's key to this conversation: 404, nothing stored.
        other = await services.db.workspaces.create_api_key(f"ws-{uuid.uuid4().hex[:10]}")
        foreign = await client.post(
            url,
            json=body,
            headers={"Authorization": f"Bearer {other}", "Accept": "application/json"},
        )
        assert foreign.status_code == 404
        assert len(await _turn_rows(services, conv)) == 1


async def test_an_upload_sent_as_a_form_field_not_a_file_names_the_fix(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.post(
            f"{base_url}/v1/documents", data={"file": "just some text"}, headers=_auth(tenant)
        )
    assert resp.status_code == 422
    detail = resp.json()["detail"]
    assert "file" in detail and "filename" in detail and "UploadFile" not in detail


async def test_a_turn_failed_by_data_the_database_refused_is_named_so_and_logged_once(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not "the database was unavailable" (a 503 to retry), and no SQL for the client."""
    import importlib

    from psycopg import DataError

    drafting = importlib.import_module("convrag.nodes._drafting")

    def refused(text: str) -> list[str]:
        raise DataError("PostgreSQL text fields cannot contain NUL (0x00) bytes: INSERT INTO")

    monkeypatch.setattr(drafting, "extract_entities", refused)
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        events = await sse_events(
            client,
            f"{base_url}/v1/conversations/{conv}/messages",
            {"content": "What is John Doe's basic salary?"},
            _auth(tenant),
        )
    name, error = events[-1]
    reason = "the database refused the turn's data (DataError)"
    assert name == "error" and error == {"code": "turn_failed", "message": reason}
    [row] = await _turn_rows(services, conv)
    turn = await services.db.turns.get_turn(tenant["workspace"], conv, row["id"])
    assert turn is not None and turn.status == "failed" and turn.error == reason
    logged = [r for r in caplog.records if r.name == "convrag.assistant"]
    assert len(logged) == 1 and reason in logged[0].getMessage()
    assert logged[0].exc_info is not None  # the traceback, for the server log only


async def test_a_message_to_a_deleted_conversation_is_a_404_logged_without_a_traceback(
    base_url: str, tenant: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    caplog.set_level(logging.INFO, logger="convrag")
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        gone = await client.delete(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
        assert gone.status_code == 204
        sent = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "Where do staff park?"},
            headers={**_auth(tenant), "Accept": "application/json"},
        )
    assert sent.status_code == 404
    logged = [r for r in caplog.records if r.name.startswith("convrag")]
    assert all(r.levelno < logging.WARNING and not r.exc_info for r in logged)
