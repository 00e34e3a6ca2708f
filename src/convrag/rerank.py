"""Reranking: rescore fused search candidates with a cross-encoder served over HTTP.

``RERANKER=http:<url>`` speaks the common ``/rerank`` shape that Hugging Face TEI,
Infinity, Jina and Cohere-compatible servers share: a query and a list of texts in,
one score per text out. No cross-encoder ships its weights in a PyPI wheel that runs
offline, so there is no local one: ``RERANKER=none`` (the default) keeps the fused order.

A reranker is optional by nature: on a timeout or an error the caller keeps the fused
order and records why.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import aiohttp

from convrag.records import Source


class RerankError(RuntimeError):
    """The rerank server failed or answered something this client cannot read."""


def endpoint(spec: str) -> str | None:
    """The URL a ``RERANKER`` value names, or None for ``none``; ValueError otherwise."""
    if spec in ("", "none"):
        return None
    if spec.startswith("http:") and spec[5:].startswith(("http://", "https://")):
        url = spec[5:].rstrip("/")
        return url if url.endswith("/rerank") else f"{url}/rerank"
    raise ValueError(
        f"RERANKER={spec!r}: use 'none' or 'http:<url of a TEI, Infinity, Jina or "
        "Cohere-compatible /rerank server>'"
    )


def scores_from(reply: Any, n: int) -> list[float]:
    """One score per text from either reply shape: TEI's ``[{"index", "score"}]`` or
    Jina's and Cohere's ``{"results": [{"index", "relevance_score"}]}``."""
    items = reply.get("results") if isinstance(reply, dict) else reply
    if not isinstance(items, list):
        raise RerankError("the rerank reply has no list of scores")
    scores: list[float | None] = [None] * n
    for item in items:
        try:
            index = int(item["index"])
            score = float(item["score"] if "score" in item else item["relevance_score"])
        except (KeyError, TypeError, ValueError) as exc:
            raise RerankError(f"unreadable rerank item {item!r}") from exc
        if 0 <= index < n:
            scores[index] = score
    if any(s is None for s in scores):
        raise RerankError("the rerank reply did not score every text")
    return [float(s) for s in scores if s is not None]


class HttpReranker:
    """A ``/rerank`` client on one aiohttp session."""

    def __init__(self, url: str, session: aiohttp.ClientSession, *, model: str | None = None):
        self.url = url
        self.session = session
        self.model = model

    @classmethod
    @asynccontextmanager
    async def open(cls, url: str, *, api_key: str | None = None) -> AsyncIterator[HttpReranker]:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        async with aiohttp.ClientSession(headers=headers) as session:
            yield cls(url, session)

    async def rerank(self, query: str, texts: Sequence[str], timeout_s: float) -> list[float]:
        """A relevance score per text (higher is more relevant), in input order."""
        # "texts" for TEI and Infinity, "documents" for Jina and Cohere; each ignores the other.
        body = {"query": query, "texts": list(texts), "documents": list(texts)}
        try:
            async with self.session.post(
                self.url, json=body, timeout=aiohttp.ClientTimeout(total=timeout_s)
            ) as resp:
                if resp.status >= 400:
                    raise RerankError(f"rerank server answered {resp.status}")
                reply = await resp.json(content_type=None)
        except aiohttp.ClientError as exc:
            raise RerankError(f"rerank server unreachable ({type(exc).__name__})") from exc
        return scores_from(reply, len(texts))


async def rerank_sources(
    reranker: HttpReranker, query: str, sources: list[Source], timeout_s: float
) -> tuple[list[Source], str | None]:
    """``sources`` in the reranker's order with its scores, or unchanged and the reason
    when it failed or ran out of time."""
    if not sources:
        return sources, None
    try:
        scores = await reranker.rerank(query, [s["text"] for s in sources], timeout_s)
    except TimeoutError:
        return sources, f"timeout after {timeout_s} s"
    except RerankError as exc:
        return sources, str(exc)
    rescored: list[Source] = []
    for source, score in zip(sources, scores, strict=True):
        item: Source = {**source, "rerank_score": score}
        rescored.append(item)
    rescored.sort(key=lambda s: -(s.get("rerank_score") or 0.0))
    return rescored, None
