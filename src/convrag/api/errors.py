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
