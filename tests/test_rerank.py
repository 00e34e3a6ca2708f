"""The HTTP reranker: both reply shapes, and the fused order kept on failure."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from convrag.records import Source
from convrag.rerank import HttpReranker, endpoint, rerank_sources


class RerankStub:
    """A ``/rerank`` server: scores texts that contain ``favourite`` 1, others 0."""

    def __init__(self, favourite: str) -> None:
        self.favourite = favourite
        self.shape = "tei"
        self.status = 200
        self.delay_s = 0.0
        self.requests: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        await asyncio.sleep(self.delay_s)
        if self.status != 200:
            return web.json_response({"error": "boom"}, status=self.status)
        scores = [1.0 if self.favourite in t else 0.0 for t in body["texts"]]
        if self.shape == "tei":
            return web.json_response([{"index": i, "score": s} for i, s in enumerate(scores)])
        results = [{"index": i, "relevance_score": s} for i, s in enumerate(scores)]
        return web.json_response({"results": results})


@asynccontextmanager
async def serving(favourite: str) -> AsyncIterator[tuple[RerankStub, str]]:
    """A stub ``/rerank`` server on an ephemeral port, and its base URL."""
    server = RerankStub(favourite)
    app = web.Application()
    app.router.add_post("/rerank", server.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield server, f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@pytest.fixture
async def stub() -> AsyncIterator[tuple[RerankStub, str]]:
    async with serving("25 days") as served:
        yield served


def _sources(*texts: str) -> list[Source]:
    return [
        Source(
            id=str(i), source_type="chunk", document_id="d", title=None, text=t, url=None, score=1.0
        )
        for i, t in enumerate(texts)
    ]


@pytest.mark.parametrize("shape", ["tei", "cohere"])
async def test_both_reply_shapes_reorder_the_candidates(
    stub: tuple[RerankStub, str], shape: str
) -> None:
    server, url = stub
    server.shape = shape
    async with HttpReranker.open(endpoint(f"http:{url}") or "") as reranker:
        ranked, failure = await rerank_sources(
            reranker, "annual leave", _sources("Meals: 60 euros.", "Leave: 25 days."), 1.0
        )
    assert failure is None
    assert [s["text"] for s in ranked] == ["Leave: 25 days.", "Meals: 60 euros."]
    assert ranked[0]["rerank_score"] == 1.0
    assert server.requests[0]["documents"] == server.requests[0]["texts"]


@pytest.mark.parametrize(("status", "delay", "reason"), [(500, 0.0, "500"), (200, 2.0, "timeout")])
async def test_a_failing_or_slow_reranker_keeps_the_fused_order_and_says_why(
    stub: tuple[RerankStub, str], status: int, delay: float, reason: str
) -> None:
    server, url = stub
    server.status, server.delay_s = status, delay
    sources = _sources("Meals: 60 euros.", "Leave: 25 days.")
    async with HttpReranker.open(f"{url}/rerank") as reranker:
        ranked, failure = await rerank_sources(reranker, "annual leave", sources, 0.3)
    assert ranked == sources
    assert failure is not None and reason in failure
