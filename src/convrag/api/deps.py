"""Typed FastAPI dependencies: settings, services, the assistant, the caller's workspace,
and a conversation id checked to be that workspace's.

Routes declare what they need as ``Annotated`` parameters (``WorkspaceDep``,
``OwnedConversation``, ...), so authentication, rate limiting and ownership checks run
before a route's body and no route repeats them.
"""

from __future__ import annotations

import base64
import binascii
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Literal, TypeVar

from fastapi import Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from convrag.api.errors import not_found, rate_limited, unauthorized
from convrag.api.turns import TurnRunner
from convrag.assistant import Assistant
from convrag.config import Settings
from convrag.ids import canonical_uuid
from convrag.services import Services
from convrag.stores.base import After
from convrag.stores.database import Database

_bearer = HTTPBearer(auto_error=False, description="A workspace API key (`convrag keys create`).")


def get_services_dep(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


def get_assistant(request: Request) -> Assistant:
    assistant: Assistant = request.app.state.assistant
    return assistant


def get_runner(request: Request) -> TurnRunner:
    runner: TurnRunner = request.app.state.runner
    return runner


def get_settings_dep(services: Annotated[Services, Depends(get_services_dep)]) -> Settings:
    return services.settings


ServicesDep = Annotated[Services, Depends(get_services_dep)]
AssistantDep = Annotated[Assistant, Depends(get_assistant)]
RunnerDep = Annotated[TurnRunner, Depends(get_runner)]
SettingsDep = Annotated[Settings, Depends(get_settings_dep)]


class RateLimiter:
    """A token bucket per API key: ``per_minute`` requests, refilled continuously.

    The buckets live in PostgreSQL
    (:meth:`~convrag.stores.workspaces.WorkspaceStore.take_request_token`), so every
    worker and replica on one database enforces one limit per key, at one round trip a
    request.
    """

    def __init__(self, per_minute: int) -> None:
        self.capacity = per_minute

    async def retry_after(self, db: Database, key: str) -> int:
        """0 when the request may pass (and is counted), else whole seconds to wait."""
        wait = await db.workspaces.take_request_token(key, self.capacity)
        return 0 if wait is None else max(1, math.ceil(wait))


class KeyCache:
    """Recently resolved API keys, so a request does not pay a Postgres round trip for
    its key. A revoked key keeps working for at most ``ttl_s`` seconds."""

    def __init__(self, ttl_s: float = 30.0) -> None:
        self.ttl_s = ttl_s
        self._entries: dict[str, tuple[str, float]] = {}

    async def workspace(self, services: Services, key: str) -> str | None:
        now = time.monotonic()
        hit = self._entries.get(key)
        if hit is not None and hit[1] > now:
            return hit[0]
        workspace = await services.db.workspaces.workspace_for_key(key)
        if workspace is not None:
            if len(self._entries) > 10_000:
                self._entries.clear()
            self._entries[key] = (workspace, now + self.ttl_s)
        return workspace


async def get_workspace(
    request: Request,
    services: ServicesDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> str:
    """The workspace of the caller's API key; 401 without a valid key, 429 over the limit.

    ``credentials`` is None for any header that is not a Bearer token, so the 401 reads
    the header itself to say which is wrong: none sent, another scheme (``Basic``,
    ``Token``), or no key after ``Bearer``. It never repeats the header's value, which
    may be a key sent the wrong way.
    """
    if credentials is None or not credentials.credentials:
        raise unauthorized(
            _auth_problem(request.headers.get("authorization", ""))
            + ": send 'Authorization: Bearer <key>' (create a key with "
            "`convrag keys create --workspace W`)"
        )
    keys: KeyCache = request.app.state.keys
    workspace = await keys.workspace(services, credentials.credentials)
    if workspace is None:
        raise unauthorized("invalid or revoked API key")
    limiter: RateLimiter = request.app.state.limiter
    wait = await limiter.retry_after(services.db, credentials.credentials)
    if wait:
        raise rate_limited(limiter.capacity, wait)
    return workspace


def _auth_problem(header: str) -> str:
    """What is wrong with an ``Authorization`` header that carries no Bearer key."""
    scheme = header.strip().partition(" ")[0]
    if not scheme:
        return "missing API key"
    if scheme.lower() != "bearer":
        return "the Authorization header does not use the Bearer scheme"
    return "the Authorization header has no key after 'Bearer'"


WorkspaceDep = Annotated[str, Depends(get_workspace)]


def canonical_path_id(value: str, what: str) -> str:
    """A path id in its one stored spelling, or 404 for anything else."""
    canonical = canonical_uuid(value)
    if canonical is None:
        raise not_found(what, value)
    return canonical


async def owned_conversation(
    conversation_id: str, workspace: WorkspaceDep, services: ServicesDep
) -> str:
    """The path's conversation id (canonical), or 404 when it is not this workspace's."""
    canonical = canonical_path_id(conversation_id, "conversation")
    if not await services.db.conversations.conversation_exists(workspace, canonical):
        raise not_found("conversation", conversation_id)
    return canonical


def document_path_id(document_id: str) -> str:
    return canonical_path_id(document_id, "document")


def message_path_id(message_id: str) -> str:
    return canonical_path_id(message_id, "message")


OwnedConversation = Annotated[str, Depends(owned_conversation)]
DocumentId = Annotated[str, Depends(document_path_id)]
MessageId = Annotated[str, Depends(message_path_id)]


# -- cursor pagination ----------------------------------------------------------

ListKind = Literal["conversations", "documents"]
Row = TypeVar("Row")

MAX_PAGE = 100
DEFAULT_PAGE = 20


def encode_cursor(kind: ListKind, after: After) -> str:
    """An opaque cursor for the list ``kind`` at keyset position ``after``."""
    at, ident = after
    return (
        base64.urlsafe_b64encode(f"{kind}|{at.isoformat()}|{ident}".encode()).decode().rstrip("=")
    )


def decode_cursor(kind: ListKind, cursor: str) -> After:
    """The keyset position of a cursor made by :func:`encode_cursor` for ``kind``, or a
    ``ValueError`` saying why it is not one."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValueError("not a cursor this API returned") from None
    parts = raw.split("|")
    if len(parts) != 3:
        raise ValueError("not a cursor this API returned")
    if parts[0] != kind:
        raise ValueError(f"a cursor of {parts[0] or 'another list'}, not of {kind}")
    try:
        at = datetime.fromisoformat(parts[1])
    except ValueError:
        raise ValueError("not a cursor this API returned") from None
    ident = canonical_uuid(parts[2])
    if at.tzinfo is None or ident is None:
        raise ValueError("not a cursor this API returned")
    return at, ident


@dataclass(frozen=True, slots=True)
class Page:
    """A page request of a list: at most ``limit`` rows after the position ``after``."""

    kind: ListKind
    limit: int
    after: After | None

    def cut(
        self, rows: Sequence[Row], position: Callable[[Row], After]
    ) -> tuple[list[Row], str | None]:
        """This page of ``rows`` (fetched with ``limit + 1``: one more tells whether a
        next page exists) and the cursor of the next page, or None on the last."""
        kept = list(rows[: self.limit])
        more = len(rows) > self.limit
        return kept, encode_cursor(self.kind, position(kept[-1])) if more and kept else None


def page_of(kind: ListKind) -> Callable[..., Page]:
    """The dependency reading ``limit`` and ``cursor`` of a ``kind`` list; a malformed
    cursor, or one of another list, is a 422 naming ``cursor``."""

    def page(
        limit: Annotated[
            int, Query(ge=1, le=MAX_PAGE, description=f"Rows per page, 1 to {MAX_PAGE}.")
        ] = DEFAULT_PAGE,
        cursor: Annotated[
            str | None,
            Query(
                max_length=500,
                description="The `next_cursor` of the previous page; omit for the first.",
            ),
        ] = None,
    ) -> Page:
        if cursor is None or cursor == "":
            return Page(kind, limit, None)
        try:
            return Page(kind, limit, decode_cursor(kind, cursor))
        except ValueError as exc:
            raise RequestValidationError(
                [
                    {
                        "type": "value_error",
                        "loc": ("query", "cursor"),
                        "msg": f"{exc}; pass a next_cursor from this list, or none for the "
                        "first page",
                        "input": cursor,
                    }
                ]
            ) from None

    page.__name__ = f"{kind}_page"
    return page


ConversationPageDep = Annotated[Page, Depends(page_of("conversations"))]
DocumentPageDep = Annotated[Page, Depends(page_of("documents"))]
