"""ASGI middleware of the service: the request body size limit.

It runs before routing and body parsing, so an oversized body is refused with 413
before any of it is buffered, whether its size is declared by ``Content-Length`` or
only seen while it streams in.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import NamedTuple

from fastapi import HTTPException, status
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convrag.api.errors import is_openai_path, openai_error_body
from convrag.api.metrics import HTTP_ERRORS
from convrag.documents.base import size_text


class BodyLimit(NamedTuple):
    """The most bytes a route's request body may have, and the 413's ``detail`` past it.

    The two may name different numbers: an upload's body holds the file in multipart
    framing, so it is allowed more bytes than ``MAX_FILE_BYTES``, while the client is told
    the setting's own value (see :func:`body_limit` and :func:`file_limit`)."""

    allowed: int
    detail: str


def body_limit(limit: int, setting: str) -> BodyLimit:
    """The limit of a request body set by ``setting`` (``limit`` bytes)."""
    return BodyLimit(
        limit,
        f"request body is over the {limit} byte limit; the server's {setting} setting sets it",
    )


def file_over_limit(limit: int) -> str:
    """The 413's ``detail`` for an uploaded file over ``MAX_FILE_BYTES`` (``limit``)."""
    exact = f"{limit} bytes, " if limit >= 2**20 else ""
    return f"file: over the {size_text(limit)} limit ({exact}the server's MAX_FILE_BYTES)"


def file_limit(limit: int, framing: int) -> BodyLimit:
    """The limit of an upload's body: a file of ``MAX_FILE_BYTES`` (``limit``) and up to
    ``framing`` bytes of multipart framing around it; the 413 names ``limit``."""
    return BodyLimit(limit + framing, file_over_limit(limit))


class BodySizeLimit:
    """413 for bodies over the limit, whether declared by Content-Length or streamed."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], BodyLimit]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, detail = self.limit_for(scope["path"])
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _too_large(detail, send, scope["path"])
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(detail)
            return message

        try:
            await self.app(scope, counted, send)
        except BodyTooLarge:
            await _too_large(detail, send, scope["path"])


class BodyTooLarge(HTTPException):
    """Raised while a streamed body is read. An ``HTTPException``: FastAPI's body and form
    parsing turn any other error into a bare 400 ("There was an error parsing the
    body"), but let this one through to answer 413."""

    def __init__(self, detail: str) -> None:
        super().__init__(status.HTTP_413_CONTENT_TOO_LARGE, detail)


async def _too_large(detail: str, send: Send, path: str) -> None:
    """The 413, in OpenAI's error shape on the OpenAI-compatible routes."""
    shaped = openai_error_body(413, detail) if is_openai_path(path) else {"detail": detail}
    body = json.dumps(shaped).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class EveryReply:
    """What every answer gets, in one place, at its start: ``X-Content-Type-Options:
    nosniff`` (a document's text is served as ``text/plain`` and may hold HTML, which a
    browser must not run as a page), and a 4xx or 5xx is counted in
    ``convrag_http_errors_total`` by its status, whoever sent it: a route, the router's
    own 404 and 405, the validation 422s or the body limit's 413."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def started(message: Message) -> None:
            if message["type"] == "http.response.start":
                if message["status"] >= 400:
                    HTTP_ERRORS.labels(str(message["status"])).inc()
                headers = list(message.get("headers", []))
                if not any(k.lower() == b"x-content-type-options" for k, _ in headers):
                    headers.append((b"x-content-type-options", b"nosniff"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, started)
