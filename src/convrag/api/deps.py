"""Typed FastAPI dependencies: settings, services, the assistant, the caller's workspace,
and a conversation id checked to be that workspace's.

Routes declare what they need as ``Annotated`` parameters (``WorkspaceDep``,
``OwnedConversation``, ...), so authentication, rate limiting and ownership checks run
before a route's body and no route repeats them.
"""

from __future__ import annotations

import math
import time
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from convrag.api.errors import not_found
from convrag.api.turns import TurnRunner
from convrag.assistant import Assistant
from convrag.config import Settings
from convrag.ids import canonical_uuid
from convrag.services import Services

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
    """A token bucket per API key: ``per_minute`` requests, refilled continuously."""

    def __init__(self, per_minute: int) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._buckets: dict[str, tuple[float, float]] = {}

    def retry_after(self, key: str) -> int:
        """0 when the request may pass (and is counted), else seconds to wait."""
        now = time.monotonic()
        tokens, last = self._buckets.get(key, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - last) * self.rate)
        if tokens >= 1.0:
            self._buckets[key] = (tokens - 1.0, now)
            return 0
        self._buckets[key] = (tokens, now)
        return max(1, math.ceil((1.0 - tokens) / self.rate))


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
        workspace = await services.db.workspace_for_key(key)
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
    """The workspace of the caller's API key; 401 without a valid key, 429 over the limit."""
    if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "missing API key: send 'Authorization: Bearer <key>' (create one with "
            "`convrag keys create --workspace W`)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    keys: KeyCache = request.app.state.keys
    workspace = await keys.workspace(services, credentials.credentials)
    if workspace is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "invalid or revoked API key",
            headers={"WWW-Authenticate": "Bearer"},
        )
    limiter: RateLimiter = request.app.state.limiter
    wait = limiter.retry_after(credentials.credentials)
    if wait:
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"rate limit of {int(limiter.capacity)} requests/minute exceeded",
            headers={"Retry-After": str(wait)},
        )
    return workspace


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
    if not await services.db.conversation_exists(workspace, canonical):
        raise not_found("conversation", conversation_id)
    return canonical


def conversation_path_id(conversation_id: str) -> str:
    """The path's conversation id (canonical), unchecked: the turn checks ownership in the
    same round trip that loads the history."""
    return canonical_path_id(conversation_id, "conversation")


def document_path_id(document_id: str) -> str:
    return canonical_path_id(document_id, "document")


def message_path_id(message_id: str) -> str:
    return canonical_path_id(message_id, "message")


OwnedConversation = Annotated[str, Depends(owned_conversation)]
ConversationId = Annotated[str, Depends(conversation_path_id)]
DocumentId = Annotated[str, Depends(document_path_id)]
MessageId = Annotated[str, Depends(message_path_id)]
