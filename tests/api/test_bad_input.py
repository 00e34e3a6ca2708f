"""Input a new user sent that once failed unclearly: each is now a 4xx naming the problem,
or an honest reply."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from convrag.answering.replies import GREETING_ANSWER, RAG_OFF_ANSWER, THANKS_ANSWER
from tests import test_server as server_tests

_auth = server_tests._auth
_conversation = server_tests._conversation

JSON = {"Accept": "application/json"}


async def _post(
    client: httpx.AsyncClient,
    base: str,
    tenant: dict[str, str],
    conv: str,
    body: dict[str, Any],
    **headers: str,
) -> httpx.Response:
    return await client.post(
        f"{base}/v1/conversations/{conv}/messages",
        json=body,
        headers={**_auth(tenant), **JSON, **headers},
    )


async def test_a_nul_character_in_a_message_is_refused_naming_the_field(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        message = await _post(client, base_url, tenant, conv, {"content": "salary\u0000?"})
        chat = await client.post(
            f"{base_url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": [{"type": "text", "text": "a\u0000"}]}]},
            headers=_auth(tenant),
        )
        fine = await _post(client, base_url, tenant, conv, {"content": "Salary?\n\tPlease."})
    assert message.status_code == 422 and "content" in message.text
    assert "control characters" in message.text
    # The OpenAI-compatible endpoint refuses a body with a 400, as OpenAI does.
    assert chat.status_code == 400 and "control characters" in chat.text
    assert chat.json()["error"]["param"] == "messages[0].content"
    assert fine.status_code == 200, fine.text


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (b'{"_id": "a", "title": "T\\u0000", "text": "x"}\n', ":1: title contains a NUL"),
        (b'{"_id": "a", "text": "x"}\n{"_id": "a", "text": "y"}\n', ":2: _id 'a' repeats line 1"),
        (b'{"_id": "a", "title": ["x"], "text": "y"}\n', ":1: title must be a string"),
    ],
    ids=["nul-title", "repeated-id", "list-title"],
)
async def test_a_jsonl_upload_with_a_bad_record_is_a_422_naming_its_line(
    base_url: str, tenant: dict[str, str], lines: bytes, message: str
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files={"file": ("records.jsonl", lines)},
            headers=_auth(tenant),
        )
        listed = await client.get(f"{base_url}/v1/documents", headers=_auth(tenant))
    assert resp.status_code == 422, resp.text
    assert f"records.jsonl{message}" in resp.json()["detail"]
    assert all(d["source"] != "a" for d in listed.json())


async def test_an_idempotency_key_reused_for_another_message_is_a_422(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        first, again, other = [
            await _post(client, base_url, tenant, conv, {"content": q}, **{"Idempotency-Key": "k1"})
            for q in (
                "What is John Doe's salary?",
                "What is John Doe's salary?",
                "What is the capital of France?",
            )
        ]
    # The retry's reply is the stored turn's, as the first attempt gave it.
    assert first.status_code == 200 and again.json()["sources"] == first.json()["sources"]
    assert again.json()["turn_id"] == first.json()["turn_id"]
    assert other.status_code == 422
    assert "already used in this conversation for a different message" in other.text


async def test_retrieval_switched_off_without_an_llm_says_so_and_is_no_answer(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        resp = await _post(
            client,
            base_url,
            tenant,
            conv,
            {"content": "What is John Doe's salary?", "rag": {"enabled": False}},
        )
    assert resp.json()["answer"] == RAG_OFF_ANSWER
    assert resp.json()["no_answer"] is True


async def test_chit_chat_gets_its_own_fixed_reply_never_flagged_as_a_repetition(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        replies = [
            (await _post(client, base_url, tenant, conv, {"content": q})).json()
            for q in ("Hello!", "Hello!", "Thanks!")
        ]
    assert [r["answer"] for r in replies] == [GREETING_ANSWER, GREETING_ANSWER, THANKS_ANSWER]
    assert not any(r["repetition_detected"] for r in replies)


async def test_a_json_body_sent_as_another_type_is_a_415_naming_content_type(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        resp = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            content=b'{"content": "What is John Doe\'s salary?"}',
            headers={**_auth(tenant), "Content-Type": "text/plain"},
        )
    assert resp.status_code == 415
    assert "Content-Type: text/plain" in resp.json()["detail"]


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("application/xml", 406),
        ("text/event-stream;q=0.5, application/json", "json"),
        ("*/*", "sse"),
        ("text/event-stream", "sse"),
        ("application/json;q=nan", 406),
        ("text/event-stream;q=nan, application/json;q=0.1", "json"),
    ],
)
async def test_the_reply_type_follows_accept_and_an_unmet_accept_is_a_406(
    base_url: str, tenant: dict[str, str], accept: str, expected: int | str
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        resp = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is John Doe's salary?"},
            headers={**_auth(tenant), "Accept": accept},
        )
    if expected == 406:
        assert resp.status_code == 406 and "text/event-stream" in resp.json()["detail"]
    else:
        kind = "application/json" if expected == "json" else "text/event-stream"
        assert resp.status_code == 200 and resp.headers["content-type"].startswith(kind)


async def test_a_conversation_can_be_named_when_created_and_a_bad_body_is_a_422(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        named = await client.post(
            f"{base_url}/v1/conversations", json={"title": "Payroll"}, headers=_auth(tenant)
        )
        conv = named.json()["conversation_id"]
        listed = await client.get(f"{base_url}/v1/conversations", headers=_auth(tenant))
        bad = await client.post(
            f"{base_url}/v1/conversations", json={"nme": "x"}, headers=_auth(tenant)
        )
        bare = await client.post(f"{base_url}/v1/conversations", headers=_auth(tenant))
    titles = {c["id"]: c["title"] for c in listed.json()["conversations"]}
    assert named.status_code == 201 and titles[conv] == "Payroll"
    assert bad.status_code == 422 and "nme" in bad.text
    assert bare.status_code == 201


async def test_two_files_in_one_upload_are_a_422_and_nothing_is_stored(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        resp = await client.post(
            f"{base_url}/v1/documents",
            files=[("file", ("a.md", b"Alpha text here.")), ("file", ("b.md", b"Beta text."))],
            headers=_auth(tenant),
        )
        listed = await client.get(f"{base_url}/v1/documents", headers=_auth(tenant))
    assert resp.status_code == 422 and "one file per upload, got 2" in resp.text
    assert not any("a.md" in d["source"] or "b.md" in d["source"] for d in listed.json())


async def test_health_answers_head_and_chat_completions_refuse_several_choices(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        head = await client.head(f"{base_url}/healthz")
        several = await client.post(
            f"{base_url}/v1/chat/completions",
            json={"n": 3, "messages": [{"role": "user", "content": "Salary?"}]},
            headers=_auth(tenant),
        )
    assert head.status_code == 200
    assert several.status_code == 400 and "n:" in several.json()["detail"]
    assert several.json()["error"]["param"] == "n"


async def test_an_upload_not_sent_as_multipart_is_a_415_saying_how_to_send_it(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        raw = await client.post(
            f"{base_url}/v1/documents",
            content=b"# Notes\n\nSome text.",
            headers={**_auth(tenant), "Content-Type": "text/markdown"},
        )
        as_json = await client.post(
            f"{base_url}/v1/documents", json={"text": "Some text."}, headers=_auth(tenant)
        )
    for resp in (raw, as_json):
        assert resp.status_code == 415, resp.text
        assert "multipart/form-data with one part named `file`" in resp.json()["detail"]
    assert raw.json()["detail"].startswith("Content-Type: text/markdown is not read here")


async def test_every_422_lists_its_problems_and_none_reads_as_pydantic_internals(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        blank = await _post(client, base_url, tenant, conv, {"content": "   "})
        control = await _post(client, base_url, tenant, conv, {"content": "a\u0000"})
    assert blank.status_code == 422 and control.status_code == 422
    assert blank.json()["errors"] == [
        {"field": "content", "message": "must not be blank", "type": "value_error"}
    ]
    assert blank.json()["detail"] == "content: must not be blank"
    assert "Value error" not in control.text
    assert control.json()["errors"][0]["message"].startswith("must not contain control")


async def test_a_404_repeats_a_short_id_and_quotes_a_long_or_unprintable_one(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        long_id = await client.get(
            f"{base_url}/v1/conversations/{'x' * 5000}", headers=_auth(tenant)
        )
        nul = await client.get(f"{base_url}/v1/documents/%00", headers=_auth(tenant))
        short = await client.get(f"{base_url}/v1/documents/not-a-uuid", headers=_auth(tenant))
    assert long_id.status_code == 404 and len(long_id.json()["detail"]) < 120
    assert "(5000 characters)" in long_id.json()["detail"]
    assert nul.status_code == 404 and "\x00" not in nul.json()["detail"]
    assert "'\\x00'" in nul.json()["detail"]
    assert short.json()["detail"] == "document not-a-uuid not found"


async def test_markup_in_a_question_is_exported_as_text_not_as_html_or_a_script_link(
    base_url: str, tenant: dict[str, str]
) -> None:
    hostile = "<script>alert(1)</script> [click](javascript:alert(2)) & more"
    async with httpx.AsyncClient(timeout=30) as client:
        conv = await _conversation(client, base_url, tenant)
        asked = await _post(client, base_url, tenant, conv, {"content": hostile})
        assert asked.status_code == 200, asked.text
        md = await client.get(
            f"{base_url}/v1/conversations/{conv}/export",
            params={"format": "md"},
            headers=_auth(tenant),
        )
    assert "<script>" not in md.text and "](javascript:" not in md.text
    assert (
        "&lt;script&gt;alert(1)&lt;/script&gt; [click]\\(javascript:alert(2)) &amp; more" in md.text
    )


async def test_a_text_part_that_is_not_text_and_a_nan_threshold_are_refused_saying_so(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        nan = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            content=b'{"content": "Salary?", "rag": {"threshold": NaN}}',
            headers={**_auth(tenant), **JSON, "Content-Type": "application/json"},
        )
        number = await client.post(
            f"{base_url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": [{"type": "text", "text": 123}]}]},
            headers=_auth(tenant),
        )
    assert nan.status_code == 422 and "finite number" in nan.text
    assert number.status_code == 400 and "'text' must be a string, got 123" in number.text


@pytest.mark.parametrize(
    ("rag", "field"),
    [({"threshold": False}, "rag.threshold"), ({"top_k": True}, "rag.top_k")],
    ids=["threshold-false", "top-k-true"],
)
async def test_a_boolean_for_a_numeric_knob_is_a_422_naming_the_field_not_a_number(
    base_url: str, tenant: dict[str, str], rag: dict[str, bool], field: str
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        asked = await _post(client, base_url, tenant, conv, {"content": "Salary?", "rag": rag})
        chat = await client.post(
            f"{base_url}/v1/chat/completions",
            json={"messages": [{"role": "user", "content": "Salary?"}], "rag": rag, "n": True},
            headers=_auth(tenant),
        )
        turns = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
    assert asked.status_code == 422, asked.text
    (error,) = asked.json()["errors"]
    assert error["field"] == field and "must be a number, not the boolean" in error["message"]
    assert chat.status_code == 400, chat.text
    assert "must be a number, not the boolean" in chat.json()["error"]["message"]
    assert turns.json()["turns"] == []


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        (None, "missing API key"),
        ("Basic abc", "does not use the Bearer scheme"),
        ("Token {key}", "does not use the Bearer scheme"),
        ("{key}", "does not use the Bearer scheme"),
        ("Bearer", "no key after 'Bearer'"),
    ],
    ids=["none", "basic", "token-with-a-valid-key", "key-alone", "bearer-alone"],
)
async def test_a_wrong_authorization_header_is_401_saying_what_is_wrong_not_missing(
    base_url: str, tenant: dict[str, str], header: str | None, problem: str
) -> None:
    headers = {} if header is None else {"Authorization": header.format(key=tenant["key"])}
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.get(f"{base_url}/v1/documents", headers=headers)
    assert resp.status_code == 401 and resp.headers["WWW-Authenticate"] == "Bearer"
    detail = resp.json()["detail"]
    assert problem in detail.split(": send")[0] and "send 'Authorization: Bearer <key>'" in detail
    assert tenant["key"] not in detail


@pytest.mark.parametrize(
    ("body", "headers", "field"),
    [
        ({"client_message_id": "retry\u0000one"}, {}, "client_message_id"),
        ({"client_message_id": "line\nbreak"}, {}, "client_message_id"),
        ({}, {"Idempotency-Key": "tab\tkey"}, "Idempotency-Key"),
    ],
    ids=["nul-in-body", "newline-in-body", "tab-in-header"],
)
async def test_an_idempotency_key_with_control_characters_is_a_422_naming_it(
    base_url: str, tenant: dict[str, str], body: dict[str, str], headers: dict[str, str], field: str
) -> None:
    """A NUL in client_message_id reached the database, which refused it: a 503 saying
    'the database refused the turn's data'."""
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        resp = await _post(
            client, base_url, tenant, conv, {"content": "Salary?", **body}, **headers
        )
        detail = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
    assert resp.status_code == 422, resp.text
    assert resp.json()["errors"][0]["field"] == field
    assert "control characters" in resp.json()["detail"]
    assert detail.json()["turns"] == []


@pytest.mark.parametrize(
    ("path", "send", "sent"),
    [
        ("messages", {"content": b'{"content": "Salary?"}'}, "a body without a Content-Type is"),
        (
            "messages",
            {"files": {"content": ("q.txt", b"Salary?")}},
            "Content-Type: multipart/form-data is",
        ),
        ("feedback", {"content": b'{"rating": "up"}'}, "a body without a Content-Type is"),
        ("chat", {"content": b'{"messages": []}'}, "a body without a Content-Type is"),
    ],
    ids=["message-no-type", "message-multipart", "feedback-no-type", "chat-no-type"],
)
async def test_a_json_body_without_its_content_type_is_a_415_saying_how_to_send_it(
    base_url: str, tenant: dict[str, str], path: str, send: dict[str, Any], sent: str
) -> None:
    """A JSON route read such a body as no object at all: a 422 saying 'Input should be a
    valid dictionary or object to extract fields from'."""
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        url = {
            "messages": f"{base_url}/v1/conversations/{conv}/messages",
            "feedback": f"{base_url}/v1/messages/{uuid.uuid4()}/feedback",
            "chat": f"{base_url}/v1/chat/completions",
        }[path]
        resp = await client.post(url, headers={**_auth(tenant), **JSON}, **send)
        detail = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
    assert resp.status_code == 415, resp.text
    assert f"{sent} not read here" in resp.json()["detail"]
    assert "Content-Type: application/json" in resp.json()["detail"]
    assert detail.json()["turns"] == []


async def test_an_sse_reconnect_without_an_idempotency_key_is_a_422_not_a_second_question(
    base_url: str, tenant: dict[str, str]
) -> None:
    """A client that reconnects with Last-Event-ID believes it resumes its stream; the
    events carry no ids, and the message was asked again as a new turn."""
    body = {"content": "What is John Doe's salary?"}
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        url = f"{base_url}/v1/conversations/{conv}/messages"
        asked = await client.post(url, json=body, headers={**_auth(tenant), "Idempotency-Key": "k"})
        assert asked.status_code == 200 and "event: done" in asked.text
        resumed = await client.post(url, json=body, headers={**_auth(tenant), "Last-Event-ID": "7"})
        keyed = await client.post(
            url, json=body, headers={**_auth(tenant), "Last-Event-ID": "7", "Idempotency-Key": "k"}
        )
        detail = await client.get(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
    assert resumed.status_code == 422, resumed.text
    assert resumed.json()["errors"][0]["field"] == "Last-Event-ID"
    assert "Idempotency-Key" in resumed.json()["detail"]
    # With the message's key, the reconnect gets the stored answer: one `done` event.
    assert keyed.status_code == 200 and keyed.text.count("event: ") == 1
    assert "event: done" in keyed.text
    assert len(detail.json()["turns"]) == 1


@pytest.mark.parametrize(
    ("method", "path", "status", "says"),
    [
        ("GET", "/v1/conversations/..%2F..%2Fetc%2Fpasswd", 404, "no such route"),
        ("GET", "/v1/conversations/a%2Fb/export", 404, "no such route"),
        ("POST", "/v1/conversations/%00/messages/x", 404, "no such route"),
        ("GET", "/v1", 404, "no such route"),
        ("PUT", "/v1/conversations/{conv}", 405, "no route takes PUT at this path (it takes"),
        ("GET", "/v1/conversations/{conv}/messages", 405, "(it takes POST)"),
    ],
    ids=["dot-dot-id", "slash-in-id", "nul-and-more", "v1", "put", "get-messages"],
)
async def test_a_request_no_route_takes_is_named_with_its_method_and_path(
    base_url: str, tenant: dict[str, str], method: str, path: str, status: int, says: str
) -> None:
    """An id holding an encoded slash matches no route: the answer was a bare
    'Not Found' (or 'Method Not Allowed'), which does not say that no route was met."""
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        resp = await client.request(
            method, base_url + path.format(conv=conv), headers=_auth(tenant), json={}
        )
    assert resp.status_code == status, resp.text
    detail = resp.json()["detail"]
    assert detail.startswith(f"{method} ") and says in detail and "/docs" in detail
    assert "\x00" not in detail


async def test_a_405_allows_every_method_the_path_takes(
    base_url: str, tenant: dict[str, str]
) -> None:
    """Each route takes one method; the router's 405 named only the first route's
    (``Allow: GET``), though the same path is also patched and deleted."""
    async with httpx.AsyncClient(timeout=60) as client:
        conv = await _conversation(client, base_url, tenant)
        resp = await client.put(f"{base_url}/v1/conversations/{conv}", headers=_auth(tenant))
    assert resp.status_code == 405
    assert resp.headers["allow"] == "DELETE, GET, PATCH"
    assert "(it takes DELETE, GET, PATCH)" in resp.json()["detail"]
