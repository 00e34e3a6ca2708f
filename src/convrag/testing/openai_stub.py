"""A scriptable, local, OpenAI-compatible HTTP server for tests and benchmarks.

Why: the service talks to an LLM through ``langchain_openai.ChatOpenAI`` (and the
``openai`` SDK underneath). Mocking those classes would skip exactly the code that
breaks in production (request building, SSE parsing, tool-call assembly, timeouts,
error mapping). This stub fakes the *HTTP boundary* instead, so the real client
code runs unchanged against ``http://127.0.0.1:PORT/v1``.

Endpoints:

* ``POST /v1/chat/completions`` — ``stream: false`` (``chat.completion`` with ``usage``)
  and ``stream: true`` (SSE ``chat.completion.chunk`` events, then ``data: [DONE]``;
  honours ``stream_options.include_usage``).
* ``GET /v1/models`` — a single model.
* ``POST /v1/embeddings`` — deterministic feature-hashed bag-of-words vectors (texts
  sharing words get similar vectors), ``float`` or ``base64`` encoding.

Replies are chosen by rules (first match on the last message wins, see
:meth:`OpenAIStub.add_rule`), falling back to :attr:`OpenAIStub.default`.

Two ways to run it::

    async with OpenAIStub() as stub:          # inside the current event loop
        llm = ChatOpenAI(base_url=stub.base_url, api_key="x", model="stub-model")

    with OpenAIStub.in_thread() as stub:      # own loop in a daemon thread (sync code)
        ...

CLI (serves the default reply, or rules from a JSON script)::

    python -m convrag.testing.openai_stub --port 0 [--host 127.0.0.1] [--script rules.json]

This module also hosts :class:`StubServer`, the in-loop/in-thread server base class
that :mod:`convrag.testing.serper_stub` reuses.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import itertools
import json
import math
import re
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from aiohttp import web

__all__ = [
    "DEFAULT_ANSWER",
    "Matcher",
    "OpenAIStub",
    "Reply",
    "Rule",
    "StubServer",
    "hashed_embedding",
    "main",
]

DEFAULT_ANSWER = "According to the provided sources, this is the stub answer [1]."
"""Content of the default reply: short, deterministic, and it cites ``[1]``."""

JSONDict = dict[str, Any]
Matcher = str | re.Pattern[str] | Callable[[JSONDict], bool] | None
"""How a rule selects requests.

* ``str``: case-sensitive *substring* of the last message's text;
* ``re.Pattern``: ``pattern.search(last_message_text)``;
* callable: receives the whole request JSON body, returns ``True`` to match;
* ``None``: matches every request (handy with ``times=`` for "fail once").
"""


# --------------------------------------------------------------------------------------
# Generic in-loop / in-thread aiohttp server
# --------------------------------------------------------------------------------------


class StubServer:
    """Base class: an ``aiohttp.web`` app that runs in the current loop or in a thread.

    Subclasses implement :meth:`_setup_routes`. The server binds ``host`` and ``port``
    (``0`` = an ephemeral port, the default, so parallel test runs never collide); the
    chosen port is available as :attr:`port` once started.

    In-loop: ``async with server:`` or ``await server.start()`` / ``await server.stop()``.
    In-thread: ``with server:``, ``with Cls.in_thread(...)`` or
    ``server.start_in_thread()`` / ``server.stop_in_thread()``. The thread owns its own
    event loop, so synchronous code (``llm.invoke``) and other event loops can use it.
    """

    #: Seconds that ``stop()`` waits for in-flight handlers before cancelling them.
    shutdown_timeout: float = 0.2

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self._requested_port = port
        self._port: int | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._thread_loop: asyncio.AbstractEventLoop | None = None
        self._thread_stop: asyncio.Event | None = None
        # Guards rules/recordings shared between the server thread and test code.
        self._lock = threading.Lock()

    # -- subclass hook ------------------------------------------------------------------
    def _setup_routes(self, app: web.Application) -> None:
        """Register the stub's routes on ``app``."""
        raise NotImplementedError

    # -- addresses ----------------------------------------------------------------------
    @property
    def port(self) -> int:
        """The bound TCP port (only valid while running)."""
        if self._port is None:
            raise RuntimeError(f"{type(self).__name__} is not running")
        return self._port

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT`` without any path."""
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server is currently accepting connections."""
        return self._runner is not None

    # -- in-loop mode -------------------------------------------------------------------
    async def start(self) -> Self:
        """Start serving inside the *running* event loop; returns ``self``."""
        if self._runner is not None:
            raise RuntimeError(f"{type(self).__name__} already running")
        app = web.Application(client_max_size=64 * 1024 * 1024)
        self._setup_routes(app)
        # access_log=None: logging every request costs real time in benchmarks.
        # handler_cancellation=True: a client that gives up (timeout) cancels the
        # handler's scripted sleep instead of leaving it running.
        runner = web.AppRunner(
            app,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=self.shutdown_timeout,
        )
        await runner.setup()
        site = web.TCPSite(runner, self.host, self._requested_port, reuse_address=True)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        addresses = runner.addresses
        self._port = int(addresses[0][1])
        self._runner = runner
        return self

    async def stop(self) -> None:
        """Stop serving (in-loop mode). Idempotent."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        self._port = None

    async def __aenter__(self) -> Self:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    # -- in-thread mode -----------------------------------------------------------------
    def start_in_thread(self, timeout: float = 10.0) -> Self:
        """Start serving from a daemon thread with its own event loop; returns ``self``.

        Blocks until the port is bound (or raises what ``start()`` raised).
        """
        if self._thread is not None:
            raise RuntimeError(f"{type(self).__name__} already running in a thread")
        ready = threading.Event()
        failure: list[BaseException] = []

        async def serve() -> None:
            self._thread_loop = asyncio.get_running_loop()
            self._thread_stop = asyncio.Event()
            try:
                await self.start()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            try:
                await self._thread_stop.wait()
            finally:
                await self.stop()

        thread = threading.Thread(
            target=asyncio.run, args=(serve(),), name=f"{type(self).__name__}", daemon=True
        )
        thread.start()
        if not ready.wait(timeout):
            raise TimeoutError(f"{type(self).__name__} did not start within {timeout}s")
        if failure:
            thread.join(timeout)
            raise failure[0]
        self._thread = thread
        return self

    def stop_in_thread(self, timeout: float = 10.0) -> None:
        """Stop a server started with :meth:`start_in_thread`. Idempotent."""
        thread, self._thread = self._thread, None
        loop, stop_event = self._thread_loop, self._thread_stop
        if thread is None or loop is None or stop_event is None:
            return
        with contextlib.suppress(RuntimeError):  # loop already closed
            loop.call_soon_threadsafe(stop_event.set)
        thread.join(timeout)
        self._thread_loop = None
        self._thread_stop = None

    @classmethod
    @contextlib.contextmanager
    def in_thread(cls, *args: Any, **kwargs: Any) -> Iterator[Self]:
        """``with Cls.in_thread(**ctor_kwargs) as stub:`` — construct and run in a thread."""
        server = cls(*args, **kwargs)
        server.start_in_thread()
        try:
            yield server
        finally:
            server.stop_in_thread()

    def __enter__(self) -> Self:
        return self.start_in_thread()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_in_thread()


def run_forever_cli(server: StubServer, banner: Callable[[StubServer], str]) -> None:
    """Run ``server`` in the foreground until SIGINT/SIGTERM (used by the CLIs).

    Prints ``banner(server)`` (which contains the bound port) on one flushed stdout
    line, so a parent process that passed ``--port 0`` can read the chosen port.
    """

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        async with server:
            print(banner(server), flush=True)
            await stop.wait()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


# --------------------------------------------------------------------------------------
# Scripting
# --------------------------------------------------------------------------------------


@dataclass
class Reply:
    """What the stub answers to a chat-completion request.

    Attributes:
        content: Assistant text, or a callable ``(request_json) -> str`` for replies
            that depend on the request. ``None`` (default) means
            :data:`DEFAULT_ANSWER`, or ``""`` when ``tool_calls`` are given.
        tool_calls: ``[{"name": str, "arguments": dict | str, "id"?: str}]``; returned
            as OpenAI ``tool_calls`` (ids generated unless given) with
            ``finish_reason="tool_calls"``. A ``str`` ``arguments`` is sent verbatim
            (e.g. to test invalid JSON).
        status: HTTP status; anything but 200 returns an OpenAI-format error body.
        error_message: ``error.message`` for ``status != 200``.
        delay_s: Sleep before answering at all (no headers): for client timeouts.
        empty: Force ``content == ""`` (``content`` is ignored).
        first_token_delay_s: Streaming only: sleep after the headers/role chunk and
            before the first content chunk (simulates time-to-first-token).
        token_delay_s: Streaming only: sleep between content chunks.
        times: Use the rule at most this many times, then it falls through to the
            next rule (``None`` = unlimited). Ignored for the default reply.
        finish_reason: Override the ``finish_reason`` (default ``"stop"`` or
            ``"tool_calls"``), e.g. ``"length"``.
    """

    content: str | Callable[[JSONDict], str] | None = None
    tool_calls: list[JSONDict] | None = None
    status: int = 200
    error_message: str | None = None
    delay_s: float = 0.0
    empty: bool = False
    first_token_delay_s: float = 0.0
    token_delay_s: float = 0.0
    times: int | None = None
    finish_reason: str | None = None

    def render_content(self, body: JSONDict) -> str:
        """The assistant text for ``body`` (handles ``empty`` and callables)."""
        if self.empty:
            return ""
        if self.content is None:
            return "" if self.tool_calls else DEFAULT_ANSWER
        if callable(self.content):
            return self.content(body)
        return self.content


@dataclass
class Rule:
    """A matcher, its reply, and bookkeeping (``hits``, ``remaining`` uses)."""

    match: Matcher
    reply: Reply
    remaining: int | None = None
    hits: int = 0

    def matches(self, text: str, body: JSONDict) -> bool:
        """Whether this rule applies to a request with last-message ``text``."""
        m = self.match
        if m is None:
            return True
        if isinstance(m, str):
            return m in text
        if isinstance(m, re.Pattern):
            return m.search(text) is not None
        return bool(m(body))


def message_text(message: JSONDict) -> str:
    """Plain text of an OpenAI message (``content`` may be a string or a parts list)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, str):
                parts.append(part)
        return "".join(parts)
    return ""


def last_message_text(body: JSONDict) -> str:
    """Text of the last message of a chat-completion request (``""`` if none)."""
    messages = body.get("messages")
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        return message_text(messages[-1])
    return ""


_PIECE_RE = re.compile(r"\s*\S+|\s+$")
_WORD_RE = re.compile(r"\w+")


def split_tokens(content: str) -> list[str]:
    """Split text into word-ish pieces (leading whitespace kept) that join back exactly."""
    return _PIECE_RE.findall(content)


def _count_tokens(text: str) -> int:
    return len(_WORD_RE.findall(text))


_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def error_body(status: int, message: str | None = None) -> JSONDict:
    """An OpenAI-format error body for ``status``."""
    err_type, code = _ERROR_TYPES.get(status, ("server_error", None))
    return {
        "error": {
            "message": message or f"Stub error (HTTP {status}).",
            "type": err_type,
            "param": None,
            "code": code,
        }
    }


def hashed_embedding(text: str, dim: int) -> list[float]:
    """Deterministic unit vector for ``text``: signed feature hashing of its words.

    Texts sharing words get a positive cosine similarity, so retrieval over these
    vectors behaves sensibly in tests; text without words falls back to a hash of the
    whole string.
    """
    vec = [0.0] * dim
    words = _WORD_RE.findall(text.lower()) or [text]
    for word in words:
        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        vec[h % dim] += 1.0 if (h >> 63) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec))
    if norm == 0.0:  # e.g. two opposite-signed collisions
        vec[0], norm = 1.0, 1.0
    return [v / norm for v in vec]


# --------------------------------------------------------------------------------------
# The OpenAI stub
# --------------------------------------------------------------------------------------


class OpenAIStub(StubServer):
    """Fake OpenAI-compatible server (chat completions, models, embeddings).

    Args:
        default: Reply when no rule matches (default: :data:`DEFAULT_ANSWER`).
        model: Model id listed by ``/v1/models`` (responses echo the requested model).
        embedding_dim: Dimension of ``/v1/embeddings`` vectors unless the request
            sends ``dimensions``.
        host, port: Bind address; ``port=0`` picks a free port.

    Attributes:
        requests: JSON bodies of the chat-completion requests received, in order.
        request_headers: Headers of those requests (same order).
        embedding_requests: JSON bodies of the embedding requests received.
        rules: The current rules (first match wins).
        default: The fallback reply.
    """

    def __init__(
        self,
        default: Reply | None = None,
        *,
        model: str = "stub-model",
        embedding_dim: int = 384,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host=host, port=port)
        self.default = default if default is not None else Reply()
        self.model = model
        self.embedding_dim = embedding_dim
        self.rules: list[Rule] = []
        self.requests: list[JSONDict] = []
        self.request_headers: list[dict[str, str]] = []
        self.embedding_requests: list[JSONDict] = []
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1`` — pass as ``base_url`` to ChatOpenAI / AsyncOpenAI."""
        return f"{self.root_url}/v1"

    # -- scripting ----------------------------------------------------------------------
    def add_rule(self, match: Matcher, reply: Reply | str) -> Rule:
        """Append a rule; the first rule matching a request (in insertion order) wins.

        ``reply`` may be a plain string as a shorthand for ``Reply(content=...)``.
        Returns the :class:`Rule` so tests can inspect ``rule.hits``.
        """
        if isinstance(reply, str):
            reply = Reply(content=reply)
        rule = Rule(match=match, reply=reply, remaining=reply.times)
        with self._lock:
            self.rules.append(rule)
        return rule

    def reset(self, *, rules: bool = True) -> None:
        """Forget recorded requests and (unless ``rules=False``) all rules."""
        with self._lock:
            self.requests.clear()
            self.request_headers.clear()
            self.embedding_requests.clear()
            if rules:
                self.rules.clear()

    @property
    def last_request(self) -> JSONDict:
        """The most recent chat-completion request body."""
        if not self.requests:
            raise LookupError("no chat-completion request received yet")
        return self.requests[-1]

    def choose(self, body: JSONDict) -> Reply:
        """Pick the reply for ``body`` (consumes one use of a ``times``-limited rule)."""
        text = last_message_text(body)
        with self._lock:
            rules = list(self.rules)
        for rule in rules:
            if not rule.matches(text, body):
                continue
            with self._lock:
                if rule.remaining is not None:
                    if rule.remaining <= 0:
                        continue
                    rule.remaining -= 1
                rule.hits += 1
            return rule.reply
        return self.default

    # -- routes -------------------------------------------------------------------------
    def _setup_routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._chat_completions)
        app.router.add_post("/chat/completions", self._chat_completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/embeddings", self._embeddings)

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "stub"}],
            }
        )

    @staticmethod
    async def _read_json(request: web.Request) -> JSONDict | web.Response:
        try:
            body = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return web.json_response(error_body(400, "Request body is not JSON."), status=400)
        if not isinstance(body, dict):
            return web.json_response(error_body(400, "Request body must be an object."), status=400)
        return body

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        body = await self._read_json(request)
        if isinstance(body, web.Response):
            return body
        with self._lock:
            self.requests.append(body)
            self.request_headers.append(dict(request.headers))
        reply = self.choose(body)
        if reply.delay_s > 0:
            await asyncio.sleep(reply.delay_s)
        if reply.status != 200:
            return web.json_response(
                error_body(reply.status, reply.error_message), status=reply.status
            )
        if not isinstance(body.get("messages"), list):
            return web.json_response(error_body(400, "'messages' is required."), status=400)

        content = reply.render_content(body)
        tool_calls = self._render_tool_calls(reply)
        finish = reply.finish_reason or ("tool_calls" if tool_calls else "stop")
        prompt_tokens = sum(
            _count_tokens(message_text(m)) for m in body["messages"] if isinstance(m, dict)
        )
        pieces = split_tokens(content)
        completion_tokens = len(pieces) + sum(
            _count_tokens(tc["function"]["arguments"]) + 1 for tc in tool_calls
        )
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        completion_id = f"chatcmpl-stub-{next(self._ids)}"
        model = str(body.get("model") or self.model)
        created = int(time.time())

        if not body.get("stream"):
            message: JSONDict = {
                "role": "assistant",
                "content": content if (content or not tool_calls) else None,
                "refusal": None,
                "annotations": [],
            }
            if tool_calls:
                message["tool_calls"] = tool_calls
            return web.json_response(
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "logprobs": None,
                            "finish_reason": finish,
                        }
                    ],
                    "usage": usage,
                    "system_fingerprint": "stub",
                }
            )

        stream_options = body.get("stream_options")
        include_usage = isinstance(stream_options, dict) and bool(
            stream_options.get("include_usage")
        )
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)
        head = (
            f'{{"id":"{completion_id}","object":"chat.completion.chunk",'
            f'"created":{created},"model":{json.dumps(model)},"system_fingerprint":"stub",'
        )
        tail = ',"usage":null}' if include_usage else "}"

        async def send(choice: JSONDict) -> None:
            choices = json.dumps([choice], separators=(",", ":"))
            await resp.write(f'data: {head}"choices":{choices}{tail}\n\n'.encode())

        await send(
            {
                "index": 0,
                "delta": {"role": "assistant", "content": "", "refusal": None},
                "logprobs": None,
                "finish_reason": None,
            }
        )
        if reply.first_token_delay_s > 0:
            await asyncio.sleep(reply.first_token_delay_s)
        for i, piece in enumerate(pieces):
            if i and reply.token_delay_s > 0:
                await asyncio.sleep(reply.token_delay_s)
            await send(
                {"index": 0, "delta": {"content": piece}, "logprobs": None, "finish_reason": None}
            )
        for index, tc in enumerate(tool_calls):
            args = tc["function"]["arguments"]
            cut = len(args) // 2  # two fragments: exercises client-side concatenation
            await send(
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": tc["id"],
                                "type": "function",
                                "function": {"name": tc["function"]["name"], "arguments": ""},
                            }
                        ]
                    },
                    "logprobs": None,
                    "finish_reason": None,
                }
            )
            for fragment in (args[:cut], args[cut:]):
                if fragment:
                    await send(
                        {
                            "index": 0,
                            "delta": {
                                "tool_calls": [
                                    {"index": index, "function": {"arguments": fragment}}
                                ]
                            },
                            "logprobs": None,
                            "finish_reason": None,
                        }
                    )
        await send({"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish})
        if include_usage:
            usage_chunk = json.dumps(usage, separators=(",", ":"))
            await resp.write(f'data: {head}"choices":[],"usage":{usage_chunk}}}\n\n'.encode())
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp

    def _render_tool_calls(self, reply: Reply) -> list[JSONDict]:
        out: list[JSONDict] = []
        for i, tc in enumerate(reply.tool_calls or []):
            args = tc.get("arguments", {})
            out.append(
                {
                    "id": str(tc.get("id") or f"call_stub_{next(self._ids)}_{i}"),
                    "type": "function",
                    "function": {
                        "name": str(tc["name"]),
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        return out

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await self._read_json(request)
        if isinstance(body, web.Response):
            return body
        with self._lock:
            self.embedding_requests.append(body)
        raw = body.get("input")
        inputs: list[Any]
        if isinstance(raw, str):
            inputs = [raw]
        elif isinstance(raw, list) and raw and all(isinstance(x, int) for x in raw):
            inputs = [raw]  # a single pre-tokenised input
        elif isinstance(raw, list):
            inputs = raw
        else:
            return web.json_response(error_body(400, "'input' is required."), status=400)
        dim = body.get("dimensions") or self.embedding_dim
        if not isinstance(dim, int) or dim <= 0:
            return web.json_response(error_body(400, "'dimensions' must be > 0."), status=400)
        b64 = body.get("encoding_format") == "base64"
        data = []
        total = 0
        for i, item in enumerate(inputs):
            text = item if isinstance(item, str) else " ".join(f"t{x}" for x in item)
            total += _count_tokens(text)
            vec = hashed_embedding(text, dim)
            emb: list[float] | str = (
                base64.b64encode(struct.pack(f"<{dim}f", *vec)).decode("ascii") if b64 else vec
            )
            data.append({"object": "embedding", "index": i, "embedding": emb})
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "model": str(body.get("model") or self.model),
                "usage": {"prompt_tokens": total, "total_tokens": total},
            }
        )


# --------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------


def rules_from_script(items: Sequence[JSONDict]) -> list[tuple[Matcher, Reply]]:
    """Parse ``--script`` entries into ``(matcher, reply)`` pairs.

    Each entry: ``{"match_regex"?: str, "content"?: str, "tool_calls"?: [...],
    "status"?: int, "error_message"?: str, "delay_s"?: float, "empty"?: bool,
    "first_token_delay_s"?: float, "token_delay_s"?: float, "times"?: int}``;
    a missing ``match_regex`` matches everything.
    """
    allowed = {
        "content",
        "tool_calls",
        "status",
        "error_message",
        "delay_s",
        "empty",
        "first_token_delay_s",
        "token_delay_s",
        "times",
        "finish_reason",
    }
    out: list[tuple[Matcher, Reply]] = []
    for item in items:
        unknown = set(item) - allowed - {"match_regex"}
        if unknown:
            raise ValueError(f"unknown keys in script rule: {sorted(unknown)}")
        regex = item.get("match_regex")
        matcher: Matcher = re.compile(regex) if regex is not None else None
        out.append((matcher, Reply(**{k: v for k, v in item.items() if k in allowed})))
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m convrag.testing.openai_stub --port N [--host H] [--script F.json]``."""
    parser = argparse.ArgumentParser(
        prog="python -m convrag.testing.openai_stub",
        description="Serve a fake OpenAI-compatible API. Prints "
        "'OpenAIStub listening on http://HOST:PORT/v1' once ready.",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 = pick a free port")
    parser.add_argument("--model", default="stub-model")
    parser.add_argument("--script", type=Path, help="JSON list of rules (see rules_from_script)")
    parser.add_argument("--default-content", help="content of the default reply")
    args = parser.parse_args(argv)

    default = Reply(content=args.default_content) if args.default_content is not None else None
    stub = OpenAIStub(default, model=args.model, host=args.host, port=args.port)
    if args.script is not None:
        items = json.loads(args.script.read_text(encoding="utf-8"))
        if not isinstance(items, list):
            sys.exit("--script must contain a JSON list of rules")
        for matcher, reply in rules_from_script(items):
            stub.add_rule(matcher, reply)
    run_forever_cli(stub, lambda s: f"OpenAIStub listening on {s.root_url}/v1")


if __name__ == "__main__":
    main()
