"""ASGI middleware of the service: the request body size limit.

It runs before routing and body parsing, so an oversized body is refused with 413
before any of it is buffered, whether its size is declared by ``Content-Length`` or
only seen while it streams in.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from fastapi import HTTPException, status
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convrag.api.metrics import HTTP_ERRORS


class BodySizeLimit:
    """413 for bodies over the limit, whether declared by Content-Length or streamed."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], tuple[int, str]]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, setting = self.limit_for(scope["path"])
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _too_large(limit, setting, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit, setting)
            return message

        try:
            await self.app(scope, counted, send)
        except BodyTooLarge:
            await _too_large(limit, setting, send)


def _detail(limit: int, setting: str) -> str:
    return f"request body is over the {limit} byte limit; the server's {setting} setting sets it"


class BodyTooLarge(HTTPException):
    """Raised while a streamed body is read. An ``HTTPException``: FastAPI's body and form
    parsing turn any other error into a bare 400 ("There was an error parsing the
    body"), but let this one through to answer 413."""

    def __init__(self, limit: int, setting: str) -> None:
        super().__init__(status.HTTP_413_CONTENT_TOO_LARGE, _detail(limit, setting))


async def _too_large(limit: int, setting: str, send: Send) -> None:
    body = json.dumps({"detail": _detail(limit, setting)}).encode()
    HTTP_ERRORS.labels("413").inc()
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
