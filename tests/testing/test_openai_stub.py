"""The OpenAI stub must satisfy the REAL ``ChatOpenAI`` / ``openai`` SDK clients.

These tests pin the HTTP-level behaviour other tests and benchmarks rely on:
scripted content, SSE streaming, tool calls, error statuses, timeouts, request
recording, the in-thread mode and the CLI.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI, OpenAIEmbeddings

from convrag.testing.openai_stub import (
    DEFAULT_ANSWER,
    OpenAIStub,
    Reply,
    hashed_embedding,
)


@pytest.fixture(scope="module")
async def module_stub() -> AsyncIterator[OpenAIStub]:
    """One server per module: ChatOpenAI caches its httpx client per base URL."""
    async with OpenAIStub() as stub:
        yield stub


@pytest.fixture
def stub(module_stub: OpenAIStub) -> Iterator[OpenAIStub]:
    """The module's stub with rules and recordings cleared for each test."""
    module_stub.reset()
    yield module_stub
    module_stub.reset()


def make_llm(stub: OpenAIStub, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=stub.base_url,
        api_key="test",  # type: ignore[arg-type]
        model="stub-model",
        max_retries=0,
        **kwargs,
    )


@tool
def get_weather(city: str) -> str:
    """Return the weather for a city."""
    return f"sunny in {city}"


async def test_ainvoke_returns_content_of_first_matching_rule(stub: OpenAIStub) -> None:
    stub.add_rule("capital of France", Reply(content="Paris [1]."))
    stub.add_rule("capital", Reply(content="never reached"))
    msg = await make_llm(stub).ainvoke("What is the capital of France?")
    assert msg.content == "Paris [1]."
    assert stub.rules[0].hits == 1 and stub.rules[1].hits == 0


async def test_unmatched_request_gets_default_reply_citing_a_source(stub: OpenAIStub) -> None:
    stub.add_rule("something else", "nope")
    msg = await make_llm(stub).ainvoke("hello")
    assert msg.content == DEFAULT_ANSWER
    assert "[1]" in DEFAULT_ANSWER


async def test_rules_match_only_the_last_message(stub: OpenAIStub) -> None:
    stub.add_rule("first question", "wrong")
    stub.add_rule("follow-up", "right")
    msg = await make_llm(stub).ainvoke(
        [
            HumanMessage("first question"),
            AIMessage("an answer"),
            HumanMessage("a follow-up"),
        ]
    )
    assert msg.content == "right"


async def test_regex_and_callable_matchers(stub: OpenAIStub) -> None:
    stub.add_rule(re.compile(r"^rewrite:", re.I), "rewritten query")
    stub.add_rule(lambda body: body.get("temperature") == 0.7, "warm")
    llm = make_llm(stub, temperature=0.7)
    assert (await llm.ainvoke("REWRITE: it")).content == "rewritten query"
    assert (await llm.ainvoke("anything")).content == "warm"


async def test_callable_content_is_computed_from_the_request(stub: OpenAIStub) -> None:
    stub.add_rule(None, Reply(content=lambda body: body["messages"][-1]["content"].upper()))
    assert (await make_llm(stub).ainvoke("echo me")).content == "ECHO ME"


async def test_astream_yields_several_chunks_that_join_to_the_content(stub: OpenAIStub) -> None:
    content = "Streaming works in several small pieces [1]."
    stub.add_rule("stream", Reply(content=content))
    texts = [c.content async for c in make_llm(stub).astream("stream please")]
    assert len([t for t in texts if t]) >= 5
    assert "".join(str(t) for t in texts) == content
    assert stub.last_request["stream"] is True


async def test_stream_usage_is_reported_when_include_usage_is_sent(stub: OpenAIStub) -> None:
    stub.add_rule(None, "one two three")
    final: AIMessageChunk | None = None
    async for chunk in make_llm(stub, stream_usage=True).astream("count"):
        final = chunk if final is None else final + chunk
    assert final is not None and final.usage_metadata is not None
    assert final.usage_metadata["output_tokens"] == 3
    assert stub.last_request["stream_options"] == {"include_usage": True}


async def test_tool_call_reply_is_parsed_into_tool_calls_on_invoke(stub: OpenAIStub) -> None:
    stub.add_rule(
        "weather", Reply(tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}])
    )
    llm = make_llm(stub).bind_tools([get_weather])
    msg = await llm.ainvoke("weather in Paris?")
    assert isinstance(msg, AIMessage)
    assert msg.content == ""
    assert [(tc["name"], tc["args"]) for tc in msg.tool_calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert msg.tool_calls[0]["id"]
    assert msg.response_metadata["finish_reason"] == "tool_calls"
    assert stub.last_request["tools"][0]["function"]["name"] == "get_weather"


async def test_tool_call_reply_is_parsed_into_tool_calls_on_stream(stub: OpenAIStub) -> None:
    stub.add_rule(
        "weather",
        Reply(
            tool_calls=[
                {"name": "get_weather", "arguments": {"city": "Paris"}},
                {"name": "get_weather", "arguments": {"city": "Rome"}, "id": "call_given"},
            ]
        ),
    )
    llm = make_llm(stub).bind_tools([get_weather])
    final: AIMessageChunk | None = None
    n = 0
    async for chunk in llm.astream("weather in Paris and Rome?"):
        assert isinstance(chunk, AIMessageChunk)
        final = chunk if final is None else final + chunk
        n += 1
    assert final is not None and n > 3
    assert [tc["args"] for tc in final.tool_calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert final.tool_calls[1]["id"] == "call_given"
    assert final.response_metadata["finish_reason"] == "tool_calls"


async def test_status_500_raises_internal_server_error(stub: OpenAIStub) -> None:
    stub.add_rule("boom", Reply(status=500, error_message="kaput"))
    with pytest.raises(openai.InternalServerError, match="kaput"):
        await make_llm(stub).ainvoke("boom")
    with pytest.raises(openai.InternalServerError):
        async for _ in make_llm(stub).astream("boom"):
            pass


async def test_status_429_raises_rate_limit_error(stub: OpenAIStub) -> None:
    stub.add_rule(None, Reply(status=429))
    with pytest.raises(openai.RateLimitError):
        await make_llm(stub).ainvoke("hi")


async def test_delay_longer_than_client_timeout_raises_api_timeout_error(
    stub: OpenAIStub,
) -> None:
    stub.add_rule("slow", Reply(delay_s=5.0))
    with pytest.raises(openai.APITimeoutError):
        await make_llm(stub, timeout=0.3).ainvoke("slow")


async def test_empty_reply_gives_empty_content(stub: OpenAIStub) -> None:
    stub.add_rule("nothing", Reply(content="ignored", empty=True))
    assert (await make_llm(stub).ainvoke("say nothing")).content == ""
    texts = [c.content async for c in make_llm(stub).astream("say nothing")]
    assert "".join(str(t) for t in texts) == ""


async def test_times_limited_rule_falls_through_after_its_uses(stub: OpenAIStub) -> None:
    stub.add_rule("flaky", Reply(status=500, times=1))
    stub.add_rule("flaky", "recovered")
    llm = make_llm(stub)
    with pytest.raises(openai.InternalServerError):
        await llm.ainvoke("flaky call")
    assert (await llm.ainvoke("flaky call")).content == "recovered"
    assert (await llm.ainvoke("flaky call")).content == "recovered"


async def test_requests_are_recorded_with_their_temperature(stub: OpenAIStub) -> None:
    await make_llm(stub, temperature=0.0).ainvoke("cold")
    await make_llm(stub, temperature=0.9).ainvoke("hot")
    assert [r["temperature"] for r in stub.requests] == [0.0, 0.9]
    assert stub.requests[0]["messages"][-1] == {"role": "user", "content": "cold"}
    assert stub.request_headers[0]["Authorization"] == "Bearer test"
    stub.reset()
    assert stub.requests == [] and stub.rules == []


async def test_first_token_delay_is_observable_when_streaming(stub: OpenAIStub) -> None:
    stub.add_rule(None, Reply(content="late tokens here", first_token_delay_s=0.3))
    started = time.perf_counter()
    first_text_at: float | None = None
    async for chunk in make_llm(stub).astream("ttft"):
        if chunk.content and first_text_at is None:
            first_text_at = time.perf_counter() - started
    assert first_text_at is not None and first_text_at >= 0.28


async def test_64_concurrent_streams_complete(stub: OpenAIStub) -> None:
    llm = make_llm(stub)

    async def converse(i: int) -> str:
        parts = [str(c.content) async for c in llm.astream(f"question {i}")]
        return "".join(parts)

    results = await asyncio.wait_for(asyncio.gather(*(converse(i) for i in range(64))), 30)
    assert results == [DEFAULT_ANSWER] * 64
    assert len(stub.requests) == 64


async def test_async_openai_sdk_non_streaming(stub: OpenAIStub) -> None:
    stub.add_rule("sdk", "from the sdk")
    async with openai.AsyncOpenAI(base_url=stub.base_url, api_key="k", max_retries=0) as client:
        resp = await client.chat.completions.create(
            model="stub-model", messages=[{"role": "user", "content": "sdk call"}]
        )
    assert resp.choices[0].message.content == "from the sdk"
    assert resp.choices[0].finish_reason == "stop"
    assert resp.usage is not None and resp.usage.completion_tokens == 3


async def test_async_openai_sdk_streaming_with_usage(stub: OpenAIStub) -> None:
    stub.add_rule("sdk", "streamed from the sdk")
    async with openai.AsyncOpenAI(base_url=stub.base_url, api_key="k", max_retries=0) as client:
        stream = await client.chat.completions.create(
            model="stub-model",
            messages=[{"role": "user", "content": "sdk call"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "streamed from the sdk"
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage is not None


async def test_models_endpoint_lists_the_stub_model(stub: OpenAIStub) -> None:
    async with openai.AsyncOpenAI(base_url=stub.base_url, api_key="k", max_retries=0) as client:
        models = await client.models.list()
    assert [m.id for m in models.data] == ["stub-model"]


async def test_embeddings_are_deterministic_unit_vectors(stub: OpenAIStub) -> None:
    # OpenAIEmbeddings never closes the httpx client it creates; hand it one we close.
    async with httpx.AsyncClient() as http_client:
        emb = OpenAIEmbeddings(
            base_url=stub.base_url,
            api_key="k",  # type: ignore[arg-type]
            model="stub-embed",
            check_embedding_ctx_length=False,  # avoids tiktoken (needs a download)
            max_retries=0,
            http_async_client=http_client,
        )
        a, b, c = await emb.aembed_documents(["red apples", "red apples", "quantum physics"])
        red = await emb.aembed_query("red")
    assert len(a) == stub.embedding_dim
    assert a == pytest.approx(b)
    assert abs(sum(x * x for x in a) - 1.0) < 1e-5
    assert a == pytest.approx(hashed_embedding("red apples", stub.embedding_dim), abs=1e-6)
    sim_same_word = sum(x * y for x, y in zip(a, red, strict=True))
    sim_other = sum(x * y for x, y in zip(a, c, strict=True))
    assert sim_same_word > sim_other


async def test_embeddings_float_format_and_dimensions(stub: OpenAIStub) -> None:
    async with openai.AsyncOpenAI(base_url=stub.base_url, api_key="k", max_retries=0) as client:
        resp = await client.embeddings.create(
            model="m", input=["x y"], dimensions=8, encoding_format="float"
        )
    assert len(resp.data[0].embedding) == 8
    assert stub.embedding_requests[-1]["dimensions"] == 8


def test_in_thread_mode_serves_sync_invoke() -> None:
    with OpenAIStub.in_thread(Reply(content="from a thread")) as stub:
        llm = make_llm(stub)
        assert llm.invoke("hi").content == "from a thread"
        chunks = [c.content for c in llm.stream("hi")]
        assert len(chunks) > 2 and "".join(str(c) for c in chunks) == "from a thread"
    assert not stub.running


async def test_in_thread_mode_serves_another_event_loop() -> None:
    stub = OpenAIStub().start_in_thread()
    try:
        stub.add_rule(None, "cross-loop")
        assert (await make_llm(stub).ainvoke("hi")).content == "cross-loop"
    finally:
        stub.stop_in_thread()


def test_cli_serves_scripted_and_default_replies_on_an_ephemeral_port(tmp_path: Path) -> None:
    script = tmp_path / "rules.json"
    script.write_text(json.dumps([{"match_regex": "ping", "content": "pong"}]))
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "convrag.testing.openai_stub",
            "--port",
            "0",
            "--script",
            str(script),
        ],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", line)
            assert match, line
            with openai.OpenAI(base_url=match.group(1), api_key="k", max_retries=0) as client:
                msgs: Any = [{"role": "user", "content": "ping"}]
                resp = client.chat.completions.create(model="m", messages=msgs)
                assert resp.choices[0].message.content == "pong"
                msgs = [{"role": "user", "content": "other"}]
                resp = client.chat.completions.create(model="m", messages=msgs)
                assert resp.choices[0].message.content == DEFAULT_ANSWER
        finally:
            proc.terminate()
    assert proc.returncode == 0
