"""A scriptable, local fake of the Google Serper API (``google.serper.dev``).

Why: web search goes through ``langchain_community.utilities.GoogleSerperAPIWrapper``.
Faking the HTTP boundary (rather than the wrapper) keeps its real request building,
``raise_for_status`` handling and result parsing under test.

The wrapper hard-codes ``https://google.serper.dev/{type}``, so the stub is reached
through an aiohttp *client middleware* that rewrites that host onto the stub — see
:func:`serper_session`. No wrapper internals are patched::

    async with SerperStub() as stub, serper_session(stub.base_url) as session:
        search = GoogleSerperAPIWrapper(serper_api_key="k", aiosession=session)
        results = await search.aresults("who wrote dune")

Only the wrapper's *async* path (``aresults``/``arun`` with ``aiosession=``) can be
redirected: its sync path (``results``/``run``) uses ``requests`` against the
hard-coded URL and would try the real service.

Endpoints: ``POST /search``, ``/news``, ``/images``, ``/places``. The query comes from
the URL params (``q``, ``gl``, ``hl``, ``num``, ``tbs``) as the wrapper sends it, or
from a JSON body as in Serper's own docs. A missing/empty ``X-API-KEY`` gets 403 like
the real service.

CLI: ``python -m convrag.testing.serper_stub --port 0 [--host 127.0.0.1]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.client_middlewares import ClientMiddlewareType

from convrag.testing.openai_stub import StubServer, run_forever_cli
from convrag.web import SERPER_HOST, redirect_middleware

__all__ = [
    "SERPER_HOST",
    "SerperMatcher",
    "SerperReply",
    "SerperRequest",
    "SerperRule",
    "SerperStub",
    "default_results",
    "main",
    "serper_redirect_middleware",
    "serper_session",
]

JSONDict = dict[str, Any]
_KINDS = ("search", "news", "images", "places")
_RESULT_KEY = {"search": "organic", "news": "news", "images": "images", "places": "places"}


@dataclass(frozen=True)
class SerperRequest:
    """One request the stub received.

    Attributes:
        endpoint: ``"search"``, ``"news"``, ... (the URL path without ``/``).
        query: The ``q`` parameter (``""`` if absent).
        api_key: The ``X-API-KEY`` header (``None`` if absent).
        params: All query parameters merged with any JSON-body fields, as strings.
        headers: The request headers.
    """

    endpoint: str
    query: str
    api_key: str | None
    params: dict[str, str]
    headers: dict[str, str]


SerperMatcher = str | re.Pattern[str] | Callable[[SerperRequest], bool] | None
"""``str``: case-sensitive substring of the query; ``re.Pattern``: ``search`` in the
query; callable: gets the :class:`SerperRequest`; ``None``: matches everything."""


@dataclass
class SerperReply:
    """What the stub answers to a matched search.

    Attributes:
        organic: Results for ``/search`` (``[{"title", "link", "snippet", ...}]``;
            ``position`` is filled in when missing). Also used for ``/news`` etc. when
            the matching specific list is ``None``. ``None`` = deterministic defaults
            derived from the query; ``[]`` = no results.
        news: Results for ``/news`` (same shape plus e.g. ``date``/``source``).
        answer_box: Optional ``answerBox`` (the wrapper's ``arun`` prefers its
            ``answer``/``snippet`` over organic snippets).
        knowledge_graph: Optional ``knowledgeGraph``.
        extra: Extra top-level keys merged into the response.
        status: HTTP status; anything but 200 returns ``{"message", "statusCode"}``.
        error_message: ``message`` of that error body.
        delay_s: Sleep before answering (for client timeouts).
        times: Use the rule at most this many times, then fall through.
    """

    organic: list[JSONDict] | None = None
    news: list[JSONDict] | None = None
    answer_box: JSONDict | None = None
    knowledge_graph: JSONDict | None = None
    extra: JSONDict = field(default_factory=dict)
    status: int = 200
    error_message: str | None = None
    delay_s: float = 0.0
    times: int | None = None


@dataclass
class SerperRule:
    """A matcher, its reply, and bookkeeping (``hits``, ``remaining`` uses)."""

    match: SerperMatcher
    reply: SerperReply
    remaining: int | None = None
    hits: int = 0

    def matches(self, req: SerperRequest) -> bool:
        """Whether this rule applies to ``req``."""
        m = self.match
        if m is None:
            return True
        if isinstance(m, str):
            return m in req.query
        if isinstance(m, re.Pattern):
            return m.search(req.query) is not None
        return bool(m(req))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "query"


def default_results(query: str, count: int, endpoint: str = "search") -> list[JSONDict]:
    """Deterministic results derived from ``query`` (what an unscripted search returns)."""
    slug = _slug(query)
    out: list[JSONDict] = []
    for i in range(1, count + 1):
        item: JSONDict = {
            "title": f"Result {i} for {query}",
            "link": f"https://example.com/{slug}/{i}",
            "snippet": f"Snippet {i} about {query}.",
            "position": i,
        }
        if endpoint == "news":
            item["date"] = f"{i} days ago"
            item["source"] = "Example News"
        out.append(item)
    return out


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"message": message, "statusCode": status}, status=status)


class SerperStub(StubServer):
    """Fake Serper API server.

    Args:
        default_count: How many default results an unscripted query gets (capped by
            the request's ``num``).
        api_keys: If given, only these ``X-API-KEY`` values are accepted (others get
            403); by default any non-empty key is accepted.
        host, port: Bind address; ``port=0`` picks a free port.

    Attributes:
        requests: Every :class:`SerperRequest` received (rejected ones too), in order.
        rules: The current rules (first match wins).
    """

    def __init__(
        self,
        *,
        default_count: int = 3,
        api_keys: Sequence[str] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host=host, port=port)
        self.default_count = default_count
        self.api_keys = frozenset(api_keys) if api_keys is not None else None
        self.rules: list[SerperRule] = []
        self.requests: list[SerperRequest] = []

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` — the argument for :func:`serper_session`."""
        return self.root_url

    def session(self, **session_kwargs: Any) -> aiohttp.ClientSession:
        """``serper_session(self.base_url, **session_kwargs)`` (call inside the loop)."""
        return serper_session(self.base_url, **session_kwargs)

    # -- scripting ----------------------------------------------------------------------
    def add_rule(self, match: SerperMatcher, reply: SerperReply) -> SerperRule:
        """Append a rule; the first rule matching a request wins. Returns the rule."""
        rule = SerperRule(match=match, reply=reply, remaining=reply.times)
        with self._lock:
            self.rules.append(rule)
        return rule

    def reset(self, *, rules: bool = True) -> None:
        """Forget recorded requests and (unless ``rules=False``) all rules."""
        with self._lock:
            self.requests.clear()
            if rules:
                self.rules.clear()

    @property
    def queries(self) -> list[str]:
        """The ``q`` of every recorded request, in order."""
        return [r.query for r in self.requests]

    def choose(self, req: SerperRequest) -> SerperReply | None:
        """The first matching rule's reply (consuming a ``times`` use), else ``None``."""
        with self._lock:
            for rule in self.rules:
                if not rule.matches(req):
                    continue
                if rule.remaining is not None:
                    if rule.remaining <= 0:
                        continue
                    rule.remaining -= 1
                rule.hits += 1
                return rule.reply
        return None

    # -- routes -------------------------------------------------------------------------
    def _setup_routes(self, app: web.Application) -> None:
        for kind in _KINDS:
            app.router.add_post(f"/{kind}", self._search)

    async def _search(self, request: web.Request) -> web.Response:
        endpoint = request.path.strip("/")
        params = {k: v for k, v in request.query.items()}
        raw = await request.read()
        if raw.strip():
            try:
                body = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                return _error(400, "Invalid JSON body.")
            if isinstance(body, dict):
                params.update({k: str(v) for k, v in body.items()})
        api_key = request.headers.get("X-API-KEY")
        req = SerperRequest(
            endpoint=endpoint,
            query=params.get("q", ""),
            api_key=api_key,
            params=params,
            headers=dict(request.headers),
        )
        with self._lock:
            self.requests.append(req)

        if not api_key or (self.api_keys is not None and api_key not in self.api_keys):
            return _error(403, "Unauthorized.")
        reply = self.choose(req) or SerperReply()
        if reply.delay_s > 0:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return _error(reply.status, reply.error_message or f"Stub error (HTTP {reply.status}).")
        if not req.query:
            return _error(400, "Missing query parameter 'q'.")

        try:
            num = int(params.get("num", "10"))
        except ValueError:
            num = 10
        search_parameters: JSONDict = {
            "q": req.query,
            "gl": params.get("gl", "us"),
            "hl": params.get("hl", "en"),
            "type": endpoint,
            "num": num,
            "engine": "google",
        }
        if "tbs" in params:
            search_parameters["tbs"] = params["tbs"]

        specific = reply.news if endpoint == "news" else None
        results = specific if specific is not None else reply.organic
        if results is None:
            results = default_results(req.query, min(num, self.default_count), endpoint)
        results = [{**r, "position": r.get("position", i)} for i, r in enumerate(results, 1)]

        payload: JSONDict = {"searchParameters": search_parameters}
        if reply.answer_box is not None:
            payload["answerBox"] = reply.answer_box
        if reply.knowledge_graph is not None:
            payload["knowledgeGraph"] = reply.knowledge_graph
        payload[_RESULT_KEY[endpoint]] = results[:num]
        payload["credits"] = 1
        payload.update(reply.extra)
        return web.json_response(payload)


# --------------------------------------------------------------------------------------
# Client side: route the real wrapper to the stub
# --------------------------------------------------------------------------------------


def serper_redirect_middleware(stub_base_url: str) -> ClientMiddlewareType:
    """An aiohttp client middleware sending ``google.serper.dev`` requests to the stub
    (the service's own ``SERPER_BASE_URL`` mechanism)."""
    return redirect_middleware(stub_base_url)


def serper_session(stub_base_url: str, **session_kwargs: Any) -> aiohttp.ClientSession:
    """A ``ClientSession`` whose requests to ``google.serper.dev`` reach the stub.

    Pass it as ``GoogleSerperAPIWrapper(aiosession=...)``. Create it inside the event
    loop that will use it, and close it (``async with`` / ``await session.close()``):
    the wrapper never closes a session it was given.
    """
    middlewares = (serper_redirect_middleware(stub_base_url),)
    extra = tuple(session_kwargs.pop("middlewares", ()))
    return aiohttp.ClientSession(middlewares=middlewares + extra, **session_kwargs)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m convrag.testing.serper_stub --port N [--host H]``."""
    parser = argparse.ArgumentParser(
        prog="python -m convrag.testing.serper_stub",
        description="Serve a fake Google Serper API. Prints "
        "'SerperStub listening on http://HOST:PORT' once ready.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--default-count", type=int, default=3)
    args = parser.parse_args(argv)
    stub = SerperStub(default_count=args.default_count, host=args.host, port=args.port)
    run_forever_cli(stub, lambda s: f"SerperStub listening on {s.root_url}")


if __name__ == "__main__":
    main()
