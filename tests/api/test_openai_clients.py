"""The OpenAI-compatible endpoint as the official ``openai`` client uses it: each reply
validates as the client's own models, every error is one the client shows with its
message and field, and the parameters a client commonly sends are accepted, or refused
with a 400 where honouring them is impossible.

The server runs on the test's event loop, so the sync client runs in a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import openai
import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI, OpenAI
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from convrag.api.schemas import MAX_MESSAGE_CHARS
from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub, Reply
from tests.conftest import stub_llm
from tests.test_server import late_llm, rate_limited

QUESTION = "What is Prasad Chaudhari's salary?"
ASK = [{"role": "user", "content": QUESTION}]


@pytest.fixture
async def client(base_url: str, tenant: dict[str, str]) -> AsyncIterator[AsyncOpenAI]:
    async with AsyncOpenAI(
        base_url=f"{base_url}/v1", api_key=tenant["key"], max_retries=0, timeout=60
    ) as c:
        yield c


async def test_sync_and_async_clients_get_valid_replies_with_or_without_v1_in_base_url(
    base_url: str, tenant: dict[str, str]
) -> None:
    """A ``base_url`` without ``/v1`` (the server's address alone) was a 404."""

    def sync_calls(root: str) -> tuple[ChatCompletion, list[ChatCompletionChunk], list[str]]:
        with OpenAI(base_url=root, api_key=tenant["key"], max_retries=0, timeout=60) as c:
            reply = c.chat.completions.create(model="convrag", messages=ASK)  # type: ignore[arg-type]
            chunks = list(
                c.chat.completions.create(
                    model="convrag",
                    messages=ASK,  # type: ignore[arg-type]
                    stream=True,
                    stream_options={"include_usage": True},
                )
            )
            return reply, chunks, [m.id for m in c.models.list()]

    for root in (f"{base_url}/v1", f"{base_url}/v1/", base_url):
        reply, chunks, models = await asyncio.to_thread(sync_calls, root)
        async with AsyncOpenAI(base_url=root, api_key=tenant["key"], max_retries=0) as ac:
            areply = await ac.chat.completions.create(model="my-model", messages=ASK)  # type: ignore[arg-type]
        assert models == ["convrag"], root
        for r in (reply, areply):
            assert r.object == "chat.completion" and r.id.startswith("chatcmpl-")
            assert r.choices[0].message.role == "assistant"
            assert r.choices[0].finish_reason == "stop"
            assert "$120,000" in (r.choices[0].message.content or "")
            assert r.usage is not None and r.usage.total_tokens == 0  # no LLM ran
            extra = r.model_extra or {}
            assert extra["citations"] and extra["sources"] and extra["conversation_id"]
        assert areply.model == "my-model"  # the name asked for is repeated
        assert chunks[0].choices[0].delta.role == "assistant"
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == reply.choices[0].message.content
        final = [c for c in chunks if c.choices and c.choices[0].finish_reason]
        assert [c.choices[0].finish_reason for c in final] == ["stop"]
        assert (final[0].model_extra or {})["citations"]
        assert chunks[-1].choices == [] and chunks[-1].usage is not None


async def test_an_invalid_key_is_an_authentication_error_the_client_shows_the_reason_of(
    base_url: str,
) -> None:
    """The 401's ``{"detail"}`` body showed as "Error code: 401" alone."""
    async with AsyncOpenAI(base_url=f"{base_url}/v1", api_key="crk_wrong", max_retries=0) as c:
        with pytest.raises(openai.AuthenticationError) as chat:
            await c.chat.completions.create(model="convrag", messages=ASK)  # type: ignore[arg-type]
        with pytest.raises(openai.AuthenticationError) as models:
            await c.models.list()
    for exc in (chat.value, models.value):
        assert "invalid or revoked API key" in exc.message
        assert exc.code == "invalid_api_key" and exc.type == "invalid_request_error"
        assert exc.response.headers["WWW-Authenticate"] == "Bearer"


async def test_the_rate_limit_is_a_rate_limit_error_the_client_shows_the_reason_of(
    app_server: tuple[str, FastAPI], tenant: dict[str, str]
) -> None:
    base, app = app_server
    with rate_limited(app, 1):
        async with AsyncOpenAI(base_url=f"{base}/v1", api_key=tenant["key"], max_retries=0) as c:
            await c.models.list()
            with pytest.raises(openai.RateLimitError) as limited:
                await c.chat.completions.create(model="convrag", messages=ASK)  # type: ignore[arg-type]
    assert "rate limit of 1 requests/minute exceeded" in limited.value.message
    assert limited.value.code == "rate_limit_exceeded"
    assert int(limited.value.response.headers["Retry-After"]) >= 1


@pytest.mark.parametrize(
    ("messages", "param", "says"),
    [
        ([], "messages", "at least 1 item"),
        ([*ASK, {"role": "assistant", "content": "x"}], "messages", "must be a user message"),
        ([{"role": "system", "content": "Be brief."}], "messages", "must be a user message"),
        (
            [{"role": "user", "content": "salary " * 2000}],
            "messages[0].content",
            f"1 to {MAX_MESSAGE_CHARS} characters",
        ),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}],
            "messages[0].content",
            "it has no text",
        ),
        ([{"role": "user", "content": ["hi"]}], "messages[0].content", "list of parts"),
        ([{"role": "robot", "content": "hi"}], "messages[0].role", "Input should be"),
    ],
    ids=["empty", "assistant-last", "system-only", "too-long", "image-only", "bare-part", "role"],
)
async def test_a_refused_body_is_a_bad_request_error_naming_its_param(
    client: AsyncOpenAI, messages: list[dict[str, Any]], param: str, says: str
) -> None:
    """These were 422s (``UnprocessableEntityError``) showing no message; OpenAI answers
    400, which clients catch as ``BadRequestError``."""
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model="convrag", messages=messages)  # type: ignore[arg-type]
    assert says in refused.value.message
    assert refused.value.param == param and refused.value.type == "invalid_request_error"


async def test_a_body_over_the_limit_is_a_413_the_client_shows_the_reason_of(
    client: AsyncOpenAI,
) -> None:
    with pytest.raises(openai.APIStatusError) as refused:
        await client.chat.completions.create(
            model="convrag",
            messages=[{"role": "user", "content": "salary " * 200_000}],
        )
    assert refused.value.status_code == 413
    assert "MAX_BODY_BYTES" in refused.value.message


@pytest.mark.parametrize(
    ("params", "param"),
    [
        ({"n": 2}, "n"),
        (
            {"tool_choice": "required", "tools": [{"type": "function", "function": {"name": "f"}}]},
            "tool_choice",
        ),
        (
            {
                "tool_choice": {"type": "function", "function": {"name": "f"}},
                "tools": [{"type": "function", "function": {"name": "f"}}],
            },
            "tool_choice",
        ),
        ({"response_format": {"type": "json_object"}}, "response_format"),
        (
            {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "a", "schema": {}},
                }
            },
            "response_format",
        ),
        ({"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}}, "audio"),
    ],
    ids=["n", "tool-required", "tool-named", "json-object", "json-schema", "audio"],
)
async def test_a_parameter_that_would_change_the_answer_is_a_400_naming_it(
    client: AsyncOpenAI, params: dict[str, Any], param: str
) -> None:
    """Answering these with one prose choice would hand the client something else than
    it asked for (only ``n`` was refused, as a 422 showing no message)."""
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model="convrag", messages=ASK, **params)  # type: ignore[call-overload]
    assert refused.value.param == param and refused.value.code == "unsupported_value"
    assert refused.value.message.removeprefix("Error code: 400 - ").startswith(f"{param}")


async def test_harmless_parameters_and_nulls_are_accepted_and_ignored(
    client: AsyncOpenAI,
) -> None:
    """Sampling and length settings, tools the model may leave uncalled, unknown fields,
    and ``null`` for an optional field (as OpenAI takes it) all get the same answer;
    ``null`` ``n``, ``stream`` or ``model`` were 422s."""
    plain = await client.chat.completions.create(model="convrag", messages=ASK)  # type: ignore[arg-type]
    tweaked = await client.chat.completions.create(
        model="convrag",
        messages=[
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": [{"type": "text", "text": QUESTION}], "name": "ann"},
        ],
        temperature=0.2,
        top_p=0.9,
        max_tokens=5,
        max_completion_tokens=5,
        stop=["\n"],
        user="user-1",
        seed=7,
        presence_penalty=0.1,
        frequency_penalty=0.1,
        logprobs=True,
        top_logprobs=2,
        tools=[{"type": "function", "function": {"name": "lookup"}}],
        tool_choice="auto",
        parallel_tool_calls=False,
        response_format={"type": "text"},
        metadata={"team": "hr"},
        store=False,
        extra_body={"n": None, "stream": None, "model": None, "unknown_field": {"a": 1}},
    )
    assert tweaked.choices[0].message.content == plain.choices[0].message.content
    assert tweaked.choices[0].finish_reason == "stop" and tweaked.model == "convrag"


async def test_models_retrieve_answers_the_served_model_and_404s_another(
    client: AsyncOpenAI,
) -> None:
    model = await client.models.retrieve("convrag")
    with pytest.raises(openai.NotFoundError) as other:
        await client.models.retrieve("gpt-4o")
    assert model.id == "convrag" and model.object == "model"
    assert other.value.code == "model_not_found" and "'convrag'" in other.value.message


async def test_a_method_the_path_does_not_take_is_an_error_the_client_shows_the_reason_of(
    client: AsyncOpenAI,
) -> None:
    """The router's own 405 (``GET /v1/chat/completions``) in OpenAI's shape too: before,
    a bare ``{"detail"}`` body, of which the client showed nothing but the status."""
    with pytest.raises(openai.APIStatusError) as refused:
        await client.get("/chat/completions", cast_to=object)
    assert refused.value.status_code == 405
    assert refused.value.response.headers["allow"] == "POST"
    assert "no route takes GET at this path (it takes POST)" in refused.value.message


@pytest.fixture
async def rewriting_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAIStub]:
    """A stub LLM: the answer prompt gets an answer citing its first source."""
    reply = Reply(content="Prasad Chaudhari's basic salary is $80,000 [1].")
    async with stub_llm(services, monkeypatch, ("CURRENT QUESTION", reply)) as stub:
        yield stub


async def test_a_long_earlier_message_reaches_the_llm_cut_as_a_stored_question_is(
    client: AsyncOpenAI, rewriting_llm: OpenAIStub
) -> None:
    """Clients resend the whole history with each request: a text pasted earlier went
    whole into the LLM's prompts with every later question."""
    pasted = "Here are my notes on salaries. " + "salary " * 5000
    reply = await client.chat.completions.create(
        model="convrag",
        messages=[
            {"role": "user", "content": pasted},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "What about her basic salary?"},
        ],
    )
    assert reply.choices[0].finish_reason == "stop"
    assert rewriting_llm.requests, "the LLM was asked"
    prompts = str(rewriting_llm.requests)
    assert "Here are my notes on salaries." in prompts  # the history is read
    assert "salary " * (MAX_MESSAGE_CHARS // len("salary ") + 1) not in prompts


# One conversation per chat ------------------------------------------------------------

CHAT = [
    "What is Prasad Chaudhari's salary?",
    "What is his position?",
    "What is John Doe's salary?",
    "And his allowances?",
]


async def _conversations(base_url: str, tenant: dict[str, str]) -> list[dict[str, Any]]:
    """The workspace's conversations as listed, each with its stored turns."""
    auth = {"Authorization": f"Bearer {tenant['key']}"}
    async with httpx.AsyncClient(base_url=f"{base_url}/v1", headers=auth, timeout=30) as http:
        listed = (await http.get("/conversations")).json()["conversations"]
        for conv in listed:
            conv["turns"] = (await http.get(f"/conversations/{conv['id']}")).json()["turns"]
    return list(listed)


async def _streamed_answer(client: AsyncOpenAI, **params: Any) -> tuple[str, dict[str, Any]]:
    """The text a streamed completion ends on (after its last ``convrag_reset``, as a
    client that knows the field shows it) and its final chunk's extra fields."""
    text, final = "", {}
    async for chunk in await client.chat.completions.create(stream=True, **params):
        extra = chunk.model_extra or {}
        if extra.get("convrag_reset"):
            text = ""
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            if chunk.choices[0].finish_reason:
                final = extra
    return text, final


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
async def test_a_chat_replayed_by_the_client_is_one_conversation_of_its_turns(
    client: AsyncOpenAI, base_url: str, tenant: dict[str, str], stream: bool
) -> None:
    """Each request resends the whole chat, as every OpenAI client does: each one was
    stored as a conversation of its own (four conversations of one turn each)."""
    messages: list[dict[str, str]] = [{"role": "system", "content": "Be brief."}]
    ids = []
    for question in CHAT:
        messages.append({"role": "user", "content": question})
        if stream:
            answer, extra = await _streamed_answer(client, model="convrag", messages=messages)
        else:
            reply = await client.chat.completions.create(model="convrag", messages=messages)  # type: ignore[arg-type]
            answer, extra = reply.choices[0].message.content or "", reply.model_extra or {}
        ids.append(extra["conversation_id"])
        messages.append({"role": "assistant", "content": answer})
    (conv,) = await _conversations(base_url, tenant)
    assert ids == [conv["id"]] * len(CHAT)
    assert conv["turn_count"] == len(CHAT)
    assert [t["question"] for t in conv["turns"]] == CHAT
    assert [t["answer"] for t in conv["turns"]] == [m["content"] for m in messages[2::2]]


async def test_an_answer_regenerated_from_an_earlier_point_of_the_chat_stays_in_its_conversation(
    client: AsyncOpenAI, base_url: str, tenant: dict[str, str]
) -> None:
    """A chat UI's "regenerate" resends the chat up to the question again: its turn is
    the conversation's next one, and the chat goes on from the new answer."""

    async def ask(chat: list[dict[str, str]]) -> tuple[str, str]:
        reply = await client.chat.completions.create(model="convrag", messages=chat)  # type: ignore[arg-type]
        return reply.choices[0].message.content or "", (reply.model_extra or {})["conversation_id"]

    chat = [{"role": "user", "content": CHAT[0]}]
    first, conv = await ask(chat)
    chat += [{"role": "assistant", "content": first}, {"role": "user", "content": CHAT[1]}]
    _, second = await ask(chat)
    regenerated, again = await ask(chat)  # the same messages once more
    chat += [{"role": "assistant", "content": regenerated}, {"role": "user", "content": CHAT[2]}]
    _, then = await ask(chat)
    assert second == again == then == conv
    (listed,) = await _conversations(base_url, tenant)
    assert [t["question"] for t in listed["turns"]] == [CHAT[0], CHAT[1], CHAT[1], CHAT[2]]


async def test_a_client_may_name_the_conversation_in_metadata_or_a_header(
    client: AsyncOpenAI, base_url: str, tenant: dict[str, str]
) -> None:
    """Named, a conversation takes a request that sends only the new message, and its
    stored turns are the history: "his" is the Prasad Chaudhari of the first turn."""
    first = await client.chat.completions.create(model="convrag", messages=ASK)  # type: ignore[arg-type]
    conv = (first.model_extra or {})["conversation_id"]
    by_metadata = await client.chat.completions.create(
        model="convrag",
        messages=[{"role": "user", "content": "What is his position?"}],
        metadata={"conversation_id": conv},
    )
    raw = await client.chat.completions.with_raw_response.create(
        model="convrag",
        messages=[{"role": "user", "content": "And his allowances?"}],
        extra_headers={"X-Conversation-Id": conv.upper()},
    )
    by_header = raw.parse()
    assert (by_metadata.model_extra or {})["conversation_id"] == conv
    assert (by_header.model_extra or {})["conversation_id"] == conv
    assert raw.headers["x-conversation-id"] == conv  # said in the response's header too
    assert "Software Engineer" in (by_metadata.choices[0].message.content or "")
    assert "$40,000" in (by_header.choices[0].message.content or "")
    (listed,) = await _conversations(base_url, tenant)
    assert listed["id"] == conv and listed["turn_count"] == 3


async def test_a_conversation_named_that_is_not_the_workspaces_is_refused_naming_it(
    client: AsyncOpenAI, base_url: str, tenant: dict[str, str]
) -> None:
    unknown = "0b5f6c1e-8d0a-4a43-9f59-2f1a3c4d5e6f"
    with pytest.raises(openai.NotFoundError) as missing:
        await client.chat.completions.create(
            model="convrag", messages=ASK, metadata={"conversation_id": unknown}
        )
    with pytest.raises(openai.NotFoundError) as missing_by_header:
        await client.chat.completions.create(
            model="convrag", messages=ASK, extra_headers={"X-Conversation-Id": unknown}
        )
    with pytest.raises(openai.BadRequestError) as malformed:
        await client.chat.completions.create(
            model="convrag", messages=ASK, extra_headers={"X-Conversation-Id": "my-chat"}
        )
    with pytest.raises(openai.BadRequestError) as two:
        await client.chat.completions.create(
            model="convrag",
            messages=ASK,
            metadata={"conversation_id": unknown},
            extra_headers={"X-Conversation-Id": "1b5f6c1e-8d0a-4a43-9f59-2f1a3c4d5e6f"},
        )
    assert missing.value.code == "conversation_not_found"
    assert missing.value.param == "metadata.conversation_id" and unknown in missing.value.message
    assert missing_by_header.value.param == "X-Conversation-Id"
    assert (
        malformed.value.param == "X-Conversation-Id"
        and "my-chat is not a conversation id" in malformed.value.message
    )
    assert two.value.param == "metadata.conversation_id" and "different" in two.value.message
    assert await _conversations(base_url, tenant) == []


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streamed"])
async def test_a_greeting_that_starts_a_chat_is_answered_without_storing_a_conversation(
    client: AsyncOpenAI, base_url: str, tenant: dict[str, str], stream: bool
) -> None:
    """ "hello" was a conversation of its own in the list; the chat it opens is one
    conversation once it asks something, and continues as one."""
    hello = [{"role": "user", "content": "hello"}]
    if stream:
        greeting, extra = await _streamed_answer(client, model="convrag", messages=hello)
    else:
        reply = await client.chat.completions.create(model="convrag", messages=hello)  # type: ignore[arg-type]
        greeting, extra = reply.choices[0].message.content or "", reply.model_extra or {}
    assert extra["conversation_id"] is None
    assert await _conversations(base_url, tenant) == []
    chat = [*hello, {"role": "assistant", "content": greeting}]
    for question in CHAT[:2]:
        chat.append({"role": "user", "content": question})
        reply = await client.chat.completions.create(model="convrag", messages=chat)  # type: ignore[arg-type]
        chat.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
    assert "Software Engineer" in chat[-1]["content"]
    (conv,) = await _conversations(base_url, tenant)
    assert [t["question"] for t in conv["turns"]] == CHAT[:2]
    # The reply is the one a stored conversation gets to the same greeting.
    auth = {"Authorization": f"Bearer {tenant['key']}"}
    async with httpx.AsyncClient(base_url=f"{base_url}/v1", headers=auth, timeout=30) as http:
        stored = (await http.post("/conversations")).json()["conversation_id"]
        asked = await http.post(
            f"/conversations/{stored}/messages",
            json={"content": "hello"},
            headers={"Accept": "application/json"},
        )
    assert greeting == asked.json()["answer"]


@pytest.fixture
async def slow_llm(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[OpenAIStub]:
    """A stub LLM whose answers take a second to start."""
    async with late_llm(services, monkeypatch) as stub:
        yield stub


async def test_two_requests_continuing_one_conversation_at_once_get_one_answer_and_a_409(
    client: AsyncOpenAI, base_url: str, tenant: dict[str, str], slow_llm: OpenAIStub
) -> None:
    """A conversation answers one message at a time: the second request, while the first
    is answered, is refused (a conflict the client shows) and stores nothing."""
    first = await client.chat.completions.create(model="convrag", messages=ASK)  # type: ignore[arg-type]
    chat = [*ASK, {"role": "assistant", "content": first.choices[0].message.content or ""}]
    ask = [*chat, {"role": "user", "content": "And his basic salary?"}]
    answering = await client.chat.completions.create(model="convrag", messages=ask, stream=True)  # type: ignore[arg-type]
    with pytest.raises(openai.ConflictError) as busy:
        await client.chat.completions.create(model="convrag", messages=ask)  # type: ignore[arg-type]
    chunks = [c async for c in answering]
    assert "answering" in busy.value.message
    assert chunks[-1].choices[0].finish_reason == "stop"
    (conv,) = await _conversations(base_url, tenant)
    assert conv["turn_count"] == 2
