"""OpenAI-compatible routes: ``/v1/models`` and ``/v1/chat/completions`` (with and
without ``/v1``), every error in OpenAI's shape. The turns run :class:`FixedAnswerGraph`
through the real turn runner; each request is a new conversation whose history comes
from its messages."""

from __future__ import annotations

import json
from typing import Any

import httpx
import psycopg
import pytest

from convrag.api.errors import DATABASE_DOWN
from tests.api.fakes import ANSWER, SOURCE, FakeStack

QUESTION = {"messages": [{"role": "user", "content": "What is Prasad's salary?"}]}


def chunks(text: str) -> list[Any]:
    """The ``data:`` payloads of a streamed completion, ``[DONE]`` as the string."""
    out: list[Any] = []
    for line in text.splitlines():
        if line.startswith("data: "):
            data = line[6:]
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


@pytest.mark.parametrize("path", ["/v1/models", "/models"])
async def test_the_models_list_names_convrag(
    api: httpx.AsyncClient, auth: dict[str, str], path: str
) -> None:
    resp = await api.get(path, headers=auth)
    assert resp.status_code == 200
    assert resp.json()["object"] == "list"
    assert [m["id"] for m in resp.json()["data"]] == ["convrag"]


@pytest.mark.parametrize("prefix", ["/v1", ""])
async def test_retrieving_convrag_is_the_model_and_any_other_is_model_not_found(
    api: httpx.AsyncClient, auth: dict[str, str], prefix: str
) -> None:
    ok = await api.get(f"{prefix}/models/convrag", headers=auth)
    missing = await api.get(f"{prefix}/models/gpt-4o", headers=auth)
    assert (ok.status_code, ok.json()["id"]) == (200, "convrag")
    assert missing.status_code == 404
    error = missing.json()["error"]
    assert (error["param"], error["code"]) == ("model", "model_not_found")
    assert "gpt-4o" in error["message"]


async def test_no_key_gets_a_401_in_openais_shape(api: httpx.AsyncClient) -> None:
    resp = await api.post("/v1/chat/completions", json=QUESTION)
    assert resp.status_code == 401
    error = resp.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("missing API key")
    assert resp.headers["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions"])
async def test_a_completion_is_the_answer_with_its_citations_and_a_new_conversation(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack, path: str
) -> None:
    resp = await api.post(path, json={**QUESTION, "model": "gpt-x"}, headers=auth)
    assert resp.status_code == 200
    body = resp.json()
    assert (body["object"], body["model"]) == ("chat.completion", "gpt-x")
    (choice,) = body["choices"]
    assert choice["message"] == {"role": "assistant", "content": ANSWER}
    assert choice["finish_reason"] == "stop"
    assert [c["marker"] for c in body["citations"]] == ["[1]"]
    assert [s["id"] for s in body["sources"]] == [SOURCE["id"]]
    assert body["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert stack.db.rows.conversations[body["conversation_id"]].workspace_id == "acme"


async def test_the_history_is_the_requests_earlier_pairs_and_the_question_its_last_message(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Who is Prasad?"},
        {"role": "assistant", "content": "An engineer."},
        {"role": "user", "content": [{"type": "text", "text": "His salary?"}]},
    ]
    resp = await api.post("/v1/chat/completions", json={"messages": messages}, headers=auth)
    assert resp.status_code == 200
    (run,) = stack.graph.runs
    assert run["message"] == "His salary?"
    assert [(t["question"], t["answer"]) for t in run["history_override"] or []] == [
        ("Who is Prasad?", "An engineer.")
    ]


async def test_a_streamed_completion_ends_with_the_answer_its_citations_and_done(
    api: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    resp = await api.post(
        "/v1/chat/completions",
        json={**QUESTION, "stream": True, "stream_options": {"include_usage": True}},
        headers=auth,
    )
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    data = chunks(resp.text)
    assert data[-1] == "[DONE]"
    assert data[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in data[1:-3])
    assert text == ANSWER
    final, usage = data[-3], data[-2]
    assert final["choices"][0]["finish_reason"] == "stop"
    assert (final["answer"], [c["marker"] for c in final["citations"]]) == (ANSWER, ["[1]"])
    assert usage["choices"] == []
    assert usage["usage"]["total_tokens"] == 0
    assert {c["id"] for c in data[:-1]} == {data[0]["id"]}


async def test_a_failed_run_is_a_503_server_error_in_openais_shape(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    stack.graph.fail = psycopg.OperationalError("connection to 10.0.0.5:5432 lost")
    resp = await api.post("/v1/chat/completions", json=QUESTION, headers=auth)
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "3"
    assert resp.json()["error"]["type"] == "server_error"
    assert resp.json()["error"]["message"] == DATABASE_DOWN


async def test_a_failed_streamed_run_sends_an_error_chunk_then_done(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    stack.graph.fail = psycopg.OperationalError("connection to 10.0.0.5:5432 lost")
    resp = await api.post("/v1/chat/completions", json={**QUESTION, "stream": True}, headers=auth)
    assert resp.status_code == 200
    *_, error, done = chunks(resp.text)
    assert error == {
        "error": {
            "type": "server_error",
            "param": None,
            "code": "turn_failed",
            "message": "the database was unavailable",
        }
    }
    assert done == "[DONE]"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({**QUESTION, "n": 2}, "n"),
        ({**QUESTION, "tool_choice": "required"}, "tool_choice"),
        ({**QUESTION, "response_format": {"type": "json_object"}}, "response_format"),
        ({**QUESTION, "modalities": ["text", "audio"]}, "modalities"),
        ({"messages": [{"role": "assistant", "content": "Hi"}]}, "messages"),
        ({"messages": [{"role": "user", "content": "  "}]}, "messages[0].content"),
        ({"messages": []}, "messages"),
        ({}, "messages"),
        ({**QUESTION, "stream": "sometimes"}, "stream"),
    ],
)
async def test_a_request_openai_would_refuse_or_this_cannot_honour_is_400_naming_param(
    api: httpx.AsyncClient,
    auth: dict[str, str],
    stack: FakeStack,
    body: dict[str, Any],
    param: str,
) -> None:
    resp = await api.post("/v1/chat/completions", json=body, headers=auth)
    assert resp.status_code == 400
    error = resp.json()["error"]
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    assert error["message"] == resp.json()["detail"]
    assert stack.graph.runs == []
    assert stack.db.rows.conversations == {}


async def test_sampling_parameters_are_accepted_and_ignored(
    api: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    body = {**QUESTION, "temperature": 0.2, "max_tokens": 5, "stop": ["\n"], "user": "u1"}
    resp = await api.post("/v1/chat/completions", json=body, headers=auth)
    assert resp.status_code == 200
    assert resp.json()["choices"][0]["message"]["content"] == ANSWER


async def test_a_get_of_chat_completions_is_405_in_openais_shape_naming_post(
    api: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    resp = await api.get("/v1/chat/completions", headers=auth)
    assert resp.status_code == 405
    assert resp.headers["Allow"] == "POST"
    assert "it takes POST" in resp.json()["error"]["message"]
