"""Web search: the ``google_search`` tool, through langchain-community's Serper wrapper.

It exists only when ``SERPER_API_KEY`` is set. ``SERPER_BASE_URL`` (optional) sends the
wrapper's requests to another host, a proxy or a local stub, through an aiohttp client
middleware: the wrapper hard-codes ``https://google.serper.dev``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote_plus

import aiohttp
from aiohttp import hdrs
from aiohttp.client_middlewares import ClientHandlerType, ClientMiddlewareType
from langchain_core.tools import StructuredTool
from yarl import URL

from convrag.text.tokens import storable

SERPER_HOST = "google.serper.dev"


def redirect_middleware(base_url: str) -> ClientMiddlewareType:
    """An aiohttp client middleware moving ``google.serper.dev`` requests to ``base_url``.

    Other hosts pass through. Path and query are kept (under ``base_url``'s path, if any);
    the ``Host`` header follows, because aiohttp sets it before middlewares run.
    """
    target = URL(base_url)
    if target.host is None:
        raise ValueError(f"SERPER_BASE_URL needs a host: {base_url!r}")
    prefix = target.path.rstrip("/")
    host_header = target.host_port_subcomponent or target.host

    async def rewrite(
        req: aiohttp.ClientRequest, handler: ClientHandlerType
    ) -> aiohttp.ClientResponse:
        if req.url.host == SERPER_HOST:
            url = req.url.with_scheme(target.scheme).with_host(target.host or "")
            url = url.with_port(target.port)
            if prefix:
                url = url.with_path(prefix + req.url.path).with_query(req.url.query)
            req.url = url
            req.headers[hdrs.HOST] = host_header
        return await handler(req)

    return rewrite


class WebSearch:
    """Async Google search through ``GoogleSerperAPIWrapper`` (one aiohttp session per loop)."""

    def __init__(self, api_key: str, *, base_url: str | None = None, k: int = 5) -> None:
        if not api_key:
            raise ValueError("web search needs SERPER_API_KEY")
        self.api_key = api_key
        self.base_url = base_url
        self.k = k
        self._sessions: dict[int, aiohttp.ClientSession] = {}

    @classmethod
    @asynccontextmanager
    async def open(cls, api_key: str, *, base_url: str | None = None) -> AsyncIterator[WebSearch]:
        """A client whose HTTP sessions close when the block ends."""
        web = cls(api_key, base_url=base_url)
        try:
            yield web
        finally:
            await web.aclose()

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._sessions.get(id(loop))
        if session is None or session.closed:
            middlewares = (redirect_middleware(self.base_url),) if self.base_url else ()
            session = aiohttp.ClientSession(
                middlewares=middlewares, timeout=aiohttp.ClientTimeout(total=15)
            )
            self._sessions[id(loop)] = session
        return session

    async def search(self, query: str) -> list[dict[str, Any]]:
        """Organic results as ``{title, url, snippet}``, answer box first when present."""
        from langchain_community.utilities import GoogleSerperAPIWrapper

        wrapper = GoogleSerperAPIWrapper(
            serper_api_key=self.api_key, k=self.k, aiosession=self._session()
        )
        raw = await wrapper.aresults(query)
        results: list[dict[str, Any]] = []
        box = raw.get("answerBox")
        if isinstance(box, dict) and (box.get("answer") or box.get("snippet")):
            results.append(
                _hit(
                    box.get("title") or query,
                    box.get("link") or f"https://www.google.com/search?q={quote_plus(query)}",
                    box.get("answer") or box.get("snippet"),
                )
            )
        for item in raw.get("organic", [])[: self.k]:
            if item.get("link"):
                results.append(_hit(item.get("title"), item["link"], item.get("snippet")))
        return results

    def as_tool(self) -> StructuredTool:
        """The ``google_search`` tool the answering LLM may call."""

        async def google_search(query: str) -> str:
            """Search the internet for current information, facts and recent events."""
            hits = await self.search(query)
            return "\n".join(f"{h['title']} ({h['url']}): {h['snippet']}" for h in hits)

        return StructuredTool.from_function(
            coroutine=google_search,
            name="google_search",
            description="Useful for searching the internet for current information, facts, "
            "and recent events that the workspace documents do not cover.",
        )

    async def aclose(self) -> None:
        for session in self._sessions.values():
            await session.close()
        self._sessions.clear()


def _hit(title: object, url: object, snippet: object) -> dict[str, Any]:
    """One result as ``{title, url, snippet}``, strings the database can store: a page's
    text may hold a NUL or a lone surrogate, which would fail the turn when it is kept."""
    return {
        "title": storable(str(title or "")),
        "url": storable(str(url or "")),
        "snippet": storable(str(snippet or "")),
    }
