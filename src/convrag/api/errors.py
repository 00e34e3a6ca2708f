"""HTTP errors the routes share, each counted in ``convrag_http_errors_total`` under its
status when it is made.

A missing id and another workspace's id answer the same 404, so a caller cannot learn
whether an id it does not own exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import HTTPException, status

#: The longest id a 404 repeats as it was sent; a longer one is cut and quoted.
SHOWN_ID_CHARS = 64


def shown(ident: str, limit: int = SHOWN_ID_CHARS) -> str:
    """``ident`` as an error repeats it: as sent when it is short and printable, else
    quoted (control characters escaped) and cut to ``limit`` characters, so a reply never
    echoes a NUL or ten thousand characters."""
    if len(ident) > limit or not ident.isprintable() or not ident.strip():
        cut = "…" if len(ident) > limit else ""
        return f"{ident[:limit]!r}{cut} ({len(ident)} characters)"
    return ident


def not_found(what: str, ident: str) -> HTTPException:
    """A 404 naming the kind of resource and the id asked for (:func:`shown`)."""
    return HTTPException(status.HTTP_404_NOT_FOUND, f"{what} {shown(ident)} not found")


#: The longest request path a 404 or 405 for a route it does not match repeats.
SHOWN_PATH_CHARS = 200


def no_route(method: str, path: str, allowed: Sequence[str] = ()) -> str:
    """The ``detail`` of the framework's own 404 (no route matches the path) or 405
    (routes match the path and take the ``allowed`` methods, not ``method``): the request
    line as :func:`shown` repeats it, and where the routes are listed. An id holding a
    slash (``..%2F..``, decoded before routing) lands here, not at its route's 404."""
    line = f"{method} {shown(path, SHOWN_PATH_CHARS)}"
    if allowed:
        return (
            f"{line}: no route takes {method} at this path (it takes {', '.join(allowed)}); "
            "the API's routes are listed at /docs"
        )
    return f"{line}: no such route; the API's routes are listed at /docs"


#: Seconds a client is told to wait before retrying while a store is unavailable.
RETRY_AFTER_S = 3


def unavailable(detail: str) -> HTTPException:
    """A 503 with ``Retry-After``: a store or provider is down or restarting, and
    the same request can be retried."""
    return HTTPException(
        status.HTTP_503_SERVICE_UNAVAILABLE, detail, headers={"Retry-After": str(RETRY_AFTER_S)}
    )


#: What a 503 says when a store is down: what happened, and what the client can do.
DATABASE_DOWN = (
    "the database is unavailable or restarting; retry in a few seconds (GET /healthz says "
    "when it answers again)"
)
VECTOR_INDEX_DOWN = (
    "the vector index is unavailable or restarting; retry in a few seconds (GET /healthz "
    "says when it answers again)"
)
#: A full disk is no outage a retry outlasts: the operator must act.
DISK_FULL = (
    "the database is out of disk space; retrying will not help until the server's operator "
    "frees space on the disk of its data directory"
)
DATA_REFUSED = (
    "the database refused the data this answer produced; ask again in other words (the "
    "server log says what it refused)"
)
INTERNAL_FAILURE = (
    "the answer failed on an error inside the service; retry, and report it if it persists "
    "(the server log has the details)"
)


def plain_reason(exc: BaseException) -> str:
    """What a 503 tells a client about ``exc``: what happened, in plain words, and what to
    do about it. Never the exception's class or message: a client can act on neither, and
    a store's message names internal hosts and ports or quotes SQL (the log has both). An
    error whose message is written for the client (a workspace to reindex) is kept."""
    import psycopg
    from psycopg_pool import PoolTimeout
    from pymilvus import MilvusException

    from convrag.assistant import out_of_disk
    from convrag.embeddings import EmbeddingMismatch
    from convrag.retrieval.sources import SearchUnavailable

    if out_of_disk(exc):
        return DISK_FULL
    if isinstance(exc, EmbeddingMismatch):
        return str(exc)
    if isinstance(exc, MilvusException | SearchUnavailable):
        return VECTOR_INDEX_DOWN
    if isinstance(exc, psycopg.DataError):
        return DATA_REFUSED
    if isinstance(exc, (psycopg.Error, PoolTimeout)):
        return DATABASE_DOWN
    return INTERNAL_FAILURE


def unauthorized(detail: str) -> HTTPException:
    """A 401 asking for a Bearer key; ``detail`` says what is wrong with the one
    sent (never repeating it)."""
    return HTTPException(
        status.HTTP_401_UNAUTHORIZED, detail, headers={"WWW-Authenticate": "Bearer"}
    )


def rate_limited(per_minute: int, retry_after_s: int) -> HTTPException:
    """A 429: the key's ``per_minute`` requests are used up for ``retry_after_s``
    seconds (``Retry-After``)."""
    return HTTPException(
        status.HTTP_429_TOO_MANY_REQUESTS,
        f"rate limit of {per_minute} requests/minute exceeded",
        headers={"Retry-After": str(retry_after_s)},
    )


#: The paths of the OpenAI-compatible routes, with and without ``/v1`` (a client's
#: ``base_url`` may leave it out): every error they answer is in OpenAI's shape
#: (:func:`openai_error_body`), the body limit's 413 included.
OPENAI_PATHS = frozenset({"/v1/chat/completions", "/chat/completions", "/v1/models", "/models"})
_OPENAI_PREFIXES = ("/v1/models/", "/models/")


def is_openai_path(path: str) -> bool:
    """Whether ``path`` is one of the OpenAI-compatible routes (:data:`OPENAI_PATHS`, or
    a model's ``/v1/models/{model}``)."""
    return path in OPENAI_PATHS or path.startswith(_OPENAI_PREFIXES)


#: OpenAI's ``error.type`` and ``error.code`` of an answer by its status, where they
#: differ from ``invalid_request_error`` and no code.
_OPENAI_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    401: ("invalid_request_error", "invalid_api_key"),
    429: ("requests", "rate_limit_exceeded"),
    503: ("server_error", "service_unavailable"),
}


def openai_error_body(
    status_code: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
    errors: list[Any] | None = None,
) -> dict[str, Any]:
    """An error as OpenAI's API answers it, ``{"error": {message, type, param, code}}``,
    which OpenAI clients read (the message is what they show), with this service's own
    ``detail`` (the same message) and, for a refused body, its ``errors`` beside it."""
    kind, default_code = _OPENAI_ERROR_KINDS.get(
        status_code, ("server_error" if status_code >= 500 else "invalid_request_error", None)
    )
    body: dict[str, Any] = {
        "error": {"message": message, "type": kind, "param": param, "code": code or default_code},
        "detail": message,
    }
    if errors is not None:
        body["errors"] = errors
    return body
