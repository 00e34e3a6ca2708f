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

The stub is four modules by purpose, every public name importable from this one:
:mod:`convrag.testing.stub_server` (:class:`StubServer`, the in-loop/in-thread server
base class that :mod:`convrag.testing.serper_stub` reuses),
:mod:`convrag.testing.openai_rules` (the replies and the rules that pick them),
:mod:`convrag.testing.openai_wire` (the completions, errors and vectors as sent), and
this one: the OpenAI server itself and its CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import struct
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from convrag.testing.openai_rules import (
    DEFAULT_ANSWER,
    JSONDict,
    Matcher,
    Reply,
    Rule,
    last_message_text,
    message_text,
    rules_from_script,
)
from convrag.testing.openai_wire import (
    Completion,
    count_tokens,
    error_body,
    hashed_embedding,
    prompt_tokens,
    split_tokens,
)
from convrag.testing.stub_server import StubServer, run_forever_cli

# Every public name of the stub's modules, as when they were all defined here.
__all__ = [
    "DEFAULT_ANSWER",
    "Completion",
    "JSONDict",
    "Matcher",
    "OpenAIStub",
    "Reply",
    "Rule",
    "StubServer",
    "count_tokens",
    "error_body",
    "hashed_embedding",
    "last_message_text",
    "main",
    "message_text",
    "prompt_tokens",
    "rules_from_script",
    "run_forever_cli",
    "split_tokens",
]


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
        """Answer a chat completion as the rules say (:meth:`choose`), after the reply's
        delay: its error, or the completion whole or streamed as the request asks."""
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
        completion = self._completion(body, reply)
        if not body.get("stream"):
            return web.json_response(completion.whole())
        return await self._stream(request, completion, reply, body.get("stream_options"))

    def _completion(self, body: JSONDict, reply: Reply) -> Completion:
        """The completion that ``reply`` makes of the request ``body``."""
        content = reply.render_content(body)
        tool_calls = self._render_tool_calls(reply)
        return Completion(
            id=f"chatcmpl-stub-{next(self._ids)}",
            model=str(body.get("model") or self.model),
            created=int(time.time()),
            content=content,
            tool_calls=tool_calls,
            finish_reason=reply.finish_reason or ("tool_calls" if tool_calls else "stop"),
            prompt_tokens=prompt_tokens(body["messages"]),
        )

    @staticmethod
    async def _stream(
        request: web.Request, completion: Completion, reply: Reply, stream_options: Any
    ) -> web.StreamResponse:
        """Send ``completion`` as SSE chunks, paced by the reply's token delays; with
        ``stream_options.include_usage``, a last chunk holds the usage."""
        include_usage = isinstance(stream_options, dict) and bool(
            stream_options.get("include_usage")
        )
        resp = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await resp.prepare(request)
        for item in completion.stream(
            include_usage=include_usage,
            first_token_delay_s=reply.first_token_delay_s,
            token_delay_s=reply.token_delay_s,
        ):
            if isinstance(item, bytes):
                await resp.write(item)
            elif item > 0:
                await asyncio.sleep(item)
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
            total += count_tokens(text)
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
