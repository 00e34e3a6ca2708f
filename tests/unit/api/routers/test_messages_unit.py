"""Message routes: ask (SSE or JSON, idempotency keys, one at a time, stop), an
answer's stored sources, and its rating. The turns run :class:`FixedAnswerGraph`, which
answers every question with one citation, through the real turn runner."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import httpx
import psycopg
import pytest

from convrag.api.errors import DATABASE_DOWN
from tests.api.fakes import ANSWER, CITATION, SOURCE, FakeStack
from tests.unit.api.routers.checks import assert_422_naming

JSON = {"Accept": "application/json"}


def sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The ``(event, data)`` pairs of an SSE body."""
    events = []
    for block in text.split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            events.append((lines["event"], json.loads(lines["data"])))
    return events


@pytest.fixture
async def conversation(stack: FakeStack) -> str:
    return await stack.db.conversations.create_conversation("acme")


async def test_an_answer_streams_sources_tokens_its_citation_then_done(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str, stack: FakeStack
) -> None:
    resp = await api.post(
        f"/v1/conversations/{conversation}/messages", json={"content": "Salary?"}, headers=auth
    )
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert resp.headers["Cache-Control"] == "no-cache"
    events = sse(resp.text)
    names = [name for name, _ in events]
    assert names[0] == "sources"
    assert names[-1] == "done"
    assert names.index("citation") > names.index("token")
    assert "".join(d["text"] for n, d in events if n == "token") == ANSWER
    assert events[0][1]["sources"][0]["id"] == SOURCE["id"]
    done = events[-1][1]
    assert done["answer"] == ANSWER
    assert [c["marker"] for c in done["citations"]] == ["[1]"]
    assert stack.db.rows.turns[done["turn_id"]].record.status == "done"


async def test_a_json_reply_carries_the_answer_its_sources_and_citations(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str
) -> None:
    resp = await api.post(
        f"/v1/conversations/{conversation}/messages",
        json={"content": "  Salary?  "},
        headers={**auth, **JSON},
    )
    assert resp.status_code == 200
    body = resp.json()
    assert (body["conversation_id"], body["answer"]) == (conversation, ANSWER)
    assert body["rewritten_query"] == "Salary?"
    assert [s["id"] for s in body["sources"]] == [SOURCE["id"]]
    (citation,) = body["citations"]
    assert (citation["marker"], citation["document_id"]) == ("[1]", SOURCE["document_id"])
    assert citation["content_snippet"] == CITATION["snippet"]
    assert (body["no_answer"], body["confidence"]) == (False, "high")


async def test_an_accept_header_naming_neither_reply_gets_406_before_any_run(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str, stack: FakeStack
) -> None:
    resp = await api.post(
        f"/v1/conversations/{conversation}/messages",
        json={"content": "Salary?"},
        headers={**auth, "Accept": "text/html"},
    )
    assert resp.status_code == 406
    assert "text/event-stream" in resp.json()["detail"]
    assert stack.graph.runs == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"content": "   "}, "content"),
        ({}, "content"),
        ({"content": "x" * 8001}, "content"),
        ({"content": "hi", "temperature": 0}, "temperature"),
        ({"content": "hi", "rag": {"top_k": 0}}, "rag.top_k"),
        ({"content": "hi", "rag": {"top_k": True}}, "rag.top_k"),
    ],
)
async def test_a_bad_message_gets_422_naming_the_field_and_runs_nothing(
    api: httpx.AsyncClient,
    auth: dict[str, str],
    conversation: str,
    stack: FakeStack,
    body: dict[str, Any],
    field: str,
) -> None:
    resp = await api.post(f"/v1/conversations/{conversation}/messages", json=body, headers=auth)
    assert_422_naming(resp, field)
    assert stack.graph.runs == []


async def test_web_search_on_without_a_serper_key_gets_422_naming_the_fix(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str
) -> None:
    resp = await api.post(
        f"/v1/conversations/{conversation}/messages",
        json={"content": "News?", "rag": {"web_search": "on"}},
        headers=auth,
    )
    assert resp.status_code == 422
    assert resp.json()["errors"][0]["field"] == "rag.web_search"
    assert "SERPER_API_KEY" in resp.json()["detail"]


async def test_a_message_to_an_unknown_or_another_workspaces_conversation_is_404(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    theirs = await stack.db.conversations.create_conversation("other")
    for cid in (theirs, str(uuid.uuid4())):
        resp = await api.post(
            f"/v1/conversations/{cid}/messages", json={"content": "Salary?"}, headers=auth
        )
        assert resp.status_code == 404
        assert resp.json()["detail"] == f"conversation {cid} not found"
    assert stack.graph.runs == []


async def test_a_retry_with_the_same_idempotency_key_is_the_same_turn_answered_once(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str, stack: FakeStack
) -> None:
    url = f"/v1/conversations/{conversation}/messages"
    headers = {**auth, **JSON, "Idempotency-Key": "msg-1"}
    first = await api.post(url, json={"content": "Salary?"}, headers=headers)
    again = await api.post(url, json={"content": "Salary?"}, headers=headers)
    streamed = await api.post(url, json={"content": "Salary?"}, headers={**headers, "Accept": ""})
    assert first.status_code == again.status_code == 200
    assert again.json()["turn_id"] == first.json()["turn_id"]
    assert again.json()["answer"] == ANSWER
    assert [name for name, _ in sse(streamed.text)] == ["done"]
    assert len(stack.graph.runs) == 1


async def test_an_idempotency_key_used_for_another_message_gets_422(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str
) -> None:
    url = f"/v1/conversations/{conversation}/messages"
    headers = {**auth, **JSON, "Idempotency-Key": "msg-1"}
    await api.post(url, json={"content": "Salary?"}, headers=headers)
    resp = await api.post(url, json={"content": "Leave?"}, headers=headers)
    assert resp.status_code == 422
    assert resp.json()["detail"].startswith("Idempotency-Key: already used")


@pytest.mark.parametrize(
    ("headers", "body", "problem"),
    [
        ({"Idempotency-Key": " "}, {}, "Idempotency-Key: must not be blank"),
        ({"Idempotency-Key": "k" * 201}, {}, "Idempotency-Key: at most 200 characters"),
        ({}, {"client_message_id": " "}, "client_message_id: must not be blank"),
        (
            {"Idempotency-Key": "a"},
            {"client_message_id": "b"},
            "Idempotency-Key and client_message_id differ",
        ),
        ({"Last-Event-ID": "3"}, {}, "Last-Event-ID: an answer's stream cannot be resumed"),
    ],
)
async def test_a_bad_idempotency_key_gets_422_naming_it(
    api: httpx.AsyncClient,
    auth: dict[str, str],
    conversation: str,
    headers: dict[str, str],
    body: dict[str, str],
    problem: str,
) -> None:
    resp = await api.post(
        f"/v1/conversations/{conversation}/messages",
        json={"content": "Salary?", **body},
        headers={**auth, **headers},
    )
    assert resp.status_code == 422
    assert resp.json()["detail"].startswith(problem)


async def test_a_second_message_while_the_first_is_answered_gets_409(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str, stack: FakeStack
) -> None:
    url = f"/v1/conversations/{conversation}/messages"
    stack.graph.hold = asyncio.Event()
    first = asyncio.create_task(api.post(url, json={"content": "Salary?"}, headers=auth))
    await stack.graph.started.wait()
    second = await api.post(url, json={"content": "Leave?"}, headers=auth)
    stack.graph.hold.set()
    assert (await first).status_code == 200
    assert second.status_code == 409
    assert len(stack.graph.runs) == 1


async def test_a_stop_ends_the_answers_stream_stores_it_failed_and_says_which_turn(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str, stack: FakeStack
) -> None:
    stack.graph.hold = asyncio.Event()  # never set: only the stop ends the answer
    asking = asyncio.create_task(
        api.post(
            f"/v1/conversations/{conversation}/messages", json={"content": "Salary?"}, headers=auth
        )
    )
    await stack.graph.started.wait()
    resp = await api.post(f"/v1/conversations/{conversation}/stop", headers=auth)
    assert resp.status_code == 200
    body = resp.json()
    assert (body["conversation_id"], body["stopped"]) == (conversation, True)
    events = sse((await asking).text)
    assert events[-1] == ("error", {"code": "stopped", "message": events[-1][1]["message"]})
    turn = stack.db.rows.turns[body["turn_id"]].record
    assert (turn.status, turn.error) == ("failed", events[-1][1]["message"])


async def test_a_failed_run_ends_its_stream_with_an_error_and_is_stored_failed_with_why(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str, stack: FakeStack
) -> None:
    stack.graph.fail = psycopg.OperationalError("connection to 10.0.0.5:5432 lost")
    resp = await api.post(
        f"/v1/conversations/{conversation}/messages", json={"content": "Salary?"}, headers=auth
    )
    assert resp.status_code == 200
    events = sse(resp.text)
    assert [name for name, _ in events] == ["sources", "error"]
    assert events[-1][1] == {"code": "turn_failed", "message": "the database was unavailable"}
    assert "10.0.0.5" not in resp.text
    (turn,) = stack.db.rows.turns.values()
    assert (turn.record.status, turn.record.error) == ("failed", "the database was unavailable")


async def test_the_json_reply_of_a_failed_run_is_a_503_saying_to_retry(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str, stack: FakeStack
) -> None:
    stack.graph.fail = psycopg.OperationalError("connection to 10.0.0.5:5432 lost")
    resp = await api.post(
        f"/v1/conversations/{conversation}/messages",
        json={"content": "Salary?"},
        headers={**auth, **JSON},
    )
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "3"
    assert resp.json()["detail"] == DATABASE_DOWN


async def test_a_stop_with_nothing_being_answered_says_stopped_false(
    api: httpx.AsyncClient, auth: dict[str, str], conversation: str
) -> None:
    resp = await api.post(f"/v1/conversations/{conversation}/stop", headers=auth)
    assert resp.status_code == 200
    assert resp.json() == {"conversation_id": conversation, "stopped": False, "turn_id": None}


async def test_stopping_another_workspaces_conversation_is_404(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    theirs = await stack.db.conversations.create_conversation("other")
    resp = await api.post(f"/v1/conversations/{theirs}/stop", headers=auth)
    assert resp.status_code == 404


async def _answered_turn(stack: FakeStack, workspace: str = "acme") -> str:
    cid = await stack.db.conversations.create_conversation(workspace)
    turn = stack.db.turns.add_turn(workspace, cid, "Salary?", ANSWER, citations=[CITATION])
    return turn.id


@pytest.fixture
async def answered_turn(stack: FakeStack) -> str:
    """The id of an answer of ``acme`` citing :data:`SOURCE`."""
    return await _answered_turn(stack)


async def test_an_answers_sources_are_its_stored_citations(
    api: httpx.AsyncClient, auth: dict[str, str], answered_turn: str
) -> None:
    resp = await api.get(f"/v1/messages/{answered_turn}/sources", headers=auth)
    assert resp.status_code == 200
    assert resp.json() == [
        {
            "marker": "[1]",
            "position": CITATION["position"],
            "source_type": "document",
            "source_id": SOURCE["id"],
            "document_id": SOURCE["document_id"],
            "url": None,
            "relevance_score": 0.9,
            "content_snippet": SOURCE["snippet"],
            "page": None,
        }
    ]


async def test_another_workspaces_or_a_malformed_message_id_gets_404_for_sources_and_rating(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    theirs = await _answered_turn(stack, "other")
    for message_id in (theirs, "nope"):
        sources = await api.get(f"/v1/messages/{message_id}/sources", headers=auth)
        rated = await api.post(
            f"/v1/messages/{message_id}/feedback", json={"rating": "up"}, headers=auth
        )
        assert (sources.status_code, rated.status_code) == (404, 404)
        assert sources.json()["detail"] == f"message {message_id} not found"
    assert stack.db.rows.feedback == {}


async def test_a_rating_is_stored_and_a_new_one_replaces_it(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack, answered_turn: str
) -> None:
    url = f"/v1/messages/{answered_turn}/feedback"
    first = await api.post(url, json={"rating": "up", "comment": "good"}, headers=auth)
    second = await api.post(url, json={"rating": "down", "comment": "  "}, headers=auth)
    assert first.status_code == second.status_code == 200
    assert first.json()["rating"] == "up"
    assert (second.json()["message_id"], second.json()["rating"]) == (answered_turn, "down")
    assert second.json()["comment"] is None
    assert stack.db.rows.feedback[answered_turn].rating == "down"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rating": "meh"}, "rating"),
        ({}, "rating"),
        ({"rating": "up", "comment": "x" * 2001}, "comment"),
    ],
)
async def test_a_bad_rating_gets_422_naming_the_field(
    api: httpx.AsyncClient,
    auth: dict[str, str],
    answered_turn: str,
    body: dict[str, str],
    field: str,
) -> None:
    resp = await api.post(f"/v1/messages/{answered_turn}/feedback", json=body, headers=auth)
    assert_422_naming(resp, field)
