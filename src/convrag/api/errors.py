"""HTTP errors the routes share.

A missing id and another workspace's id answer the same 404, so a caller cannot learn
whether an id it does not own exists. Each 404 is counted in
``convrag_http_errors_total``.
"""

from __future__ import annotations

from fastapi import HTTPException, status

from convrag.api.metrics import HTTP_ERRORS


def not_found(what: str, ident: str) -> HTTPException:
    """A counted 404 naming the kind of resource and the id asked for."""
    HTTP_ERRORS.labels("404").inc()
    return HTTPException(status.HTTP_404_NOT_FOUND, f"{what} {ident} not found")


#: Seconds a client is told to wait before retrying while a store is unavailable.
RETRY_AFTER_S = 3


def unavailable(detail: str) -> HTTPException:
    """A counted 503 with ``Retry-After``: a store or provider is down or restarting, and
    the same request can be retried."""
    HTTP_ERRORS.labels("503").inc()
    return HTTPException(
        status.HTTP_503_SERVICE_UNAVAILABLE, detail, headers={"Retry-After": str(RETRY_AFTER_S)}
    )
