"""HTTP errors the routes share.

A missing id and another workspace's id answer the same 404, so a caller cannot learn
whether an id it does not own exists. Each 404 is counted in
``convrag_http_errors_total``.
"""

from __future__ import annotations

from fastapi import HTTPException, status

from convrag.api.metrics import HTTP_ERRORS

#: The longest id a 404 repeats as it was sent; a longer one is cut and quoted.
SHOWN_ID_CHARS = 64


def not_found(what: str, ident: str) -> HTTPException:
    """A counted 404 naming the kind of resource and the id asked for: as sent when it is
    short and printable, else quoted (control characters escaped) and cut to
    :data:`SHOWN_ID_CHARS`, so a reply never echoes a NUL or ten thousand characters."""
    HTTP_ERRORS.labels("404").inc()
    shown = ident
    if len(ident) > SHOWN_ID_CHARS or not ident.isprintable() or not ident.strip():
        cut = "…" if len(ident) > SHOWN_ID_CHARS else ""
        shown = f"{ident[:SHOWN_ID_CHARS]!r}{cut} ({len(ident)} characters)"
    return HTTPException(status.HTTP_404_NOT_FOUND, f"{what} {shown} not found")


#: Seconds a client is told to wait before retrying while a store is unavailable.
RETRY_AFTER_S = 3


def unavailable(detail: str) -> HTTPException:
    """A counted 503 with ``Retry-After``: a store or provider is down or restarting, and
    the same request can be retried."""
    HTTP_ERRORS.labels("503").inc()
    return HTTPException(
        status.HTTP_503_SERVICE_UNAVAILABLE, detail, headers={"Retry-After": str(RETRY_AFTER_S)}
    )
