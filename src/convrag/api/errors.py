"""HTTP errors the routes share, each counted in ``convrag_http_errors_total`` under its
status when it is made.

A missing id and another workspace's id answer the same 404, so a caller cannot learn
whether an id it does not own exists.
"""

from __future__ import annotations

from collections.abc import Sequence

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
