"""The Serper stub must satisfy the REAL ``GoogleSerperAPIWrapper`` (async path).

The wrapper hard-codes ``https://google.serper.dev``; it reaches the stub only through
the rewriting client middleware of ``serper_session`` — no internals are patched.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from langchain_community.utilities import GoogleSerperAPIWrapper

from convrag.testing.serper_stub import (
    SerperReply,
    SerperStub,
    default_results,
    serper_session,
)

ORGANIC = [
    {"title": "Dune (novel)", "link": "https://en.wikipedia.org/wiki/Dune_(novel)",
     "snippet": "Dune is a 1965 novel by Frank Herbert."},
    {"title": "Frank Herbert", "link": "https://en.wikipedia.org/wiki/Frank_Herbert",
     "snippet": "Frank Herbert was an American author."},
]  # fmt: skip


@pytest.fixture(scope="module")
async def module_stub() -> AsyncIterator[SerperStub]:
    async with SerperStub() as stub:
        yield stub


@pytest.fixture
async def stub(module_stub: SerperStub) -> AsyncIterator[SerperStub]:
    """The module's stub with rules and recordings cleared for each test."""
    module_stub.reset()
    yield module_stub
    module_stub.reset()


@pytest.fixture
async def session(stub: SerperStub) -> AsyncIterator[aiohttp.ClientSession]:
    async with serper_session(stub.base_url) as s:
        yield s


def make_wrapper(session: aiohttp.ClientSession, **kwargs: Any) -> GoogleSerperAPIWrapper:
    return GoogleSerperAPIWrapper(serper_api_key="secret-key", aiosession=session, **kwargs)


async def test_aresults_returns_scripted_organic_results_through_the_middleware(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    stub.add_rule(re.compile(r"dune", re.I), SerperReply(organic=ORGANIC))
    results = await make_wrapper(session).aresults("Who wrote Dune?")
    assert [r["link"] for r in results["organic"]] == [r["link"] for r in ORGANIC]
    assert [r["position"] for r in results["organic"]] == [1, 2]
    assert results["searchParameters"]["q"] == "Who wrote Dune?"
    assert stub.queries == ["Who wrote Dune?"]


async def test_arun_joins_the_organic_snippets(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    stub.add_rule("Dune", SerperReply(organic=ORGANIC))
    text = await make_wrapper(session).arun("Dune author")
    assert text == "Dune is a 1965 novel by Frank Herbert. Frank Herbert was an American author."


async def test_arun_prefers_the_answer_box(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    stub.add_rule(None, SerperReply(organic=ORGANIC, answer_box={"answer": "Frank Herbert"}))
    assert await make_wrapper(session).arun("Dune author") == "Frank Herbert"


async def test_unscripted_query_gets_deterministic_results_capped_by_k(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    results = await make_wrapper(session, k=2).aresults("solar panels")
    assert results["organic"] == default_results("solar panels", 2)
    assert results["organic"][0]["link"] == "https://example.com/solar-panels/1"


async def test_wrapper_params_and_api_key_header_arrive(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    await make_wrapper(session, gl="de", hl="de", k=5).aresults("wetter")
    req = stub.requests[-1]
    assert req.endpoint == "search"
    assert req.api_key == "secret-key"
    assert req.params == {"q": "wetter", "gl": "de", "hl": "de", "num": "5"}


async def test_news_type_is_served_from_the_news_endpoint(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    stub.add_rule("election", SerperReply(news=[{"title": "T", "link": "L", "snippet": "S"}]))
    wrapper = make_wrapper(session, type="news")
    results = await wrapper.aresults("election")
    assert results["news"] == [{"title": "T", "link": "L", "snippet": "S", "position": 1}]
    assert await wrapper.arun("election") == "S"
    assert stub.requests[-1].endpoint == "news"


async def test_status_500_surfaces_as_client_response_error(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    stub.add_rule("boom", SerperReply(status=500))
    with pytest.raises(aiohttp.ClientResponseError) as info:
        await make_wrapper(session).aresults("boom")
    assert info.value.status == 500


async def test_times_limited_failure_then_success(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    stub.add_rule(None, SerperReply(status=503, times=1))
    wrapper = make_wrapper(session)
    with pytest.raises(aiohttp.ClientResponseError):
        await wrapper.aresults("retry me")
    assert (await wrapper.aresults("retry me"))["organic"]


async def test_delay_trips_a_client_timeout(stub: SerperStub) -> None:
    stub.add_rule("slow", SerperReply(delay_s=5.0))
    async with serper_session(stub.base_url, timeout=aiohttp.ClientTimeout(total=0.2)) as s:
        with pytest.raises(asyncio.TimeoutError):
            await make_wrapper(s).aresults("slow")


async def test_missing_api_key_is_rejected_with_403(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    async with session.post("https://google.serper.dev/search", params={"q": "x"}) as resp:
        assert resp.status == 403
        assert (await resp.json())["statusCode"] == 403
    wrapper = make_wrapper(session)
    wrapper.serper_api_key = ""  # the wrapper then sends an empty X-API-KEY
    with pytest.raises(aiohttp.ClientResponseError) as info:
        await wrapper.aresults("x")
    assert info.value.status == 403
    assert [r.api_key for r in stub.requests] == [None, ""]


async def test_allowed_api_keys_reject_unknown_keys() -> None:
    async with SerperStub(api_keys=["good"]) as stub, stub.session() as session:
        good = GoogleSerperAPIWrapper(serper_api_key="good", aiosession=session)
        bad = GoogleSerperAPIWrapper(serper_api_key="bad", aiosession=session)
        assert (await good.aresults("q"))["organic"]
        with pytest.raises(aiohttp.ClientResponseError) as info:
            await bad.aresults("q")
        assert info.value.status == 403


async def test_middleware_leaves_other_hosts_alone(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    async with SerperStub() as other:
        url = f"{other.base_url}/search"
        async with session.post(url, params={"q": "direct"}, headers={"X-API-KEY": "k"}) as r:
            assert r.status == 200
        assert other.queries == ["direct"]
    assert stub.requests == []


async def test_json_body_queries_are_accepted(
    stub: SerperStub, session: aiohttp.ClientSession
) -> None:
    async with session.post(
        "https://google.serper.dev/search", json={"q": "from body"}, headers={"X-API-KEY": "k"}
    ) as resp:
        assert (await resp.json())["searchParameters"]["q"] == "from body"


async def test_in_thread_mode_serves_an_async_client() -> None:
    with SerperStub.in_thread(default_count=1) as stub:
        async with serper_session(stub.base_url) as session:
            results = await make_wrapper(session).aresults("threaded")
        assert len(results["organic"]) == 1
        assert stub.queries == ["threaded"]
