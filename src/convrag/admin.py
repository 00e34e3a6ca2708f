"""The command line's operations on a data directory, run the same way in two places: in
the command's own process, on the stores it opens (only those the operation needs), or
in a running service, which the command asks over ``/admin/v1/<name>``
(:mod:`convrag.api.routers.admin`) and which answers at once, its stores already open.

Each operation takes a typed request and returns the JSON object the command prints
from, so that a command prints the same whichever ran it. A ``ValueError`` is the
caller's mistake (exit 2 on the command line, 422 from the service).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from convrag.ids import check_id
from convrag.records import SearchMode

if TYPE_CHECKING:
    from convrag.assistant import Assistant
    from convrag.services import Services
    from convrag.stores.database import Database
    from convrag.stores.workspaces import ApiKeyRecord

Needs = Literal["database", "services", "assistant"]
"""What an operation runs on: PostgreSQL alone; every store and the embedder; or those
and the answering graph."""

Result = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Opened:
    """The stores open for an operation: the database always, the rest as it needs."""

    db: Database
    services: Services | None = None
    assistant: Assistant | None = None

    def all_services(self) -> Services:
        if self.services is None:  # pragma: no cover - a rule of OPERATIONS broken
            raise RuntimeError("this operation needs the services opened")
        return self.services

    def bot(self) -> Assistant:
        if self.assistant is None:  # pragma: no cover - a rule of OPERATIONS broken
            raise RuntimeError("this operation needs the assistant opened")
        return self.assistant


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OnWorkspace(_Request):
    workspace: str

    @field_validator("workspace")
    @classmethod
    def _workspace(cls, value: str) -> str:
        return check_id(value)


class RevokeKey(_Request):
    ref: str = Field(min_length=1, max_length=200)
    workspace: str | None = None

    @field_validator("workspace")
    @classmethod
    def _workspace(cls, value: str | None) -> str | None:
        return None if value is None else check_id(value)


class DeleteDocument(OnWorkspace):
    document_id: str = Field(min_length=1, max_length=200)


class Ask(OnWorkspace):
    question: str = Field(min_length=1, max_length=20_000)
    conversation: str | None = Field(default=None, max_length=200)


class Search(OnWorkspace):
    query: str = Field(min_length=1, max_length=20_000)
    top_k: int = Field(default=5, ge=1, le=100)
    mode: SearchMode = "hybrid"


class Nothing(_Request):
    pass


async def empty_note(db: Database, workspace: str) -> str | None:
    """The note that ``workspace`` holds no documents, naming those that do (most often
    the name was mistyped); None when it holds some."""
    if await db.documents.list_documents(workspace, limit=1):
        return None
    known = await db.documents.workspaces_with_documents()
    where = f"workspaces with documents: {', '.join(known)}" if known else "none has any yet"
    return (
        f"note: workspace {workspace!r} has no documents ({where}); "
        f"add some with `convrag ingest PATH -w {workspace}`"
    )


def key_json(k: ApiKeyRecord) -> Result:
    """A key as ``keys list`` prints it: never the key, only what identifies it."""
    return {
        "id": k.id,
        "prefix": k.prefix,
        "fingerprint": k.fingerprint,
        "created_at": k.created_at.isoformat(),
        "revoked": k.revoked,
        "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
    }


async def documents_list(opened: Opened, req: OnWorkspace) -> Result:
    docs = await opened.db.documents.list_documents(req.workspace)
    keep = ("source", "title", "status", "n_chunks")
    return {
        "documents": [{"id": str(d["id"]), **{k: d[k] for k in keep}} for d in docs],
        "note": None if docs else await empty_note(opened.db, req.workspace),
    }


async def documents_delete(opened: Opened, req: DeleteDocument) -> Result:
    from convrag.ingest import delete_document

    return {"deleted": await delete_document(opened.all_services(), req.workspace, req.document_id)}


async def search(opened: Opened, req: Search) -> Result:
    services = opened.all_services()
    note = await empty_note(opened.db, req.workspace)
    found = await services.searcher.search(req.workspace, req.query, top_k=req.top_k, mode=req.mode)
    return {"results": [{**r.as_json(), "title": r.title} for r in found], "note": note}


async def keys_create(opened: Opened, req: OnWorkspace) -> Result:
    note = await empty_note(opened.db, req.workspace)
    return {"key": await opened.db.workspaces.create_api_key(req.workspace), "note": note}


async def keys_list(opened: Opened, req: OnWorkspace) -> Result:
    return {"keys": [key_json(k) for k in await opened.db.workspaces.list_api_keys(req.workspace)]}


async def keys_revoke(opened: Opened, req: RevokeKey) -> Result:
    """The keys ``req.ref`` names, and whether the one active key among them was
    revoked (nothing is revoked when it names none, or more than one active key)."""
    matched = await opened.db.workspaces.find_api_keys(req.ref, req.workspace)
    active = [k for k in matched if not k.revoked]
    revoked = len(active) == 1 and await opened.db.workspaces.revoke_api_key_id(active[0].id)
    return {"matched": [key_json(k) for k in (active if revoked else matched)], "revoked": revoked}


#: The fields of a turn ``convrag ask`` prints (all of them with ``--json``).
TURN_FIELDS = (
    "conversation_id",
    "turn_id",
    "classification",
    "rewritten_query",
    "rewrite_method",
    "answer",
    "citations",
    "sources",
    "flags",
    "timings",
)


async def ask(opened: Opened, req: Ask) -> Result:
    bot = opened.bot()
    note = await empty_note(opened.db, req.workspace)
    if req.conversation is not None and not await opened.db.conversations.conversation_exists(
        req.workspace, req.conversation
    ):
        raise ValueError(
            f"no conversation {req.conversation!r} in workspace {req.workspace!r}; leave out "
            "-c to start one (each answer prints its conversation id)"
        )
    conversation = req.conversation or await bot.new_conversation(req.workspace)
    state = await bot.ask(req.question, conversation, workspace_id=req.workspace)
    turn = json.loads(json.dumps({k: state.get(k) for k in TURN_FIELDS}, default=str))
    return {"turn": turn, "note": note}


async def ping(opened: Opened, req: Nothing) -> Result:
    import os

    return {"pid": os.getpid()}


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation: its request's type, what it runs on, and the work."""

    request: type[_Request]
    needs: Needs
    run: Callable[[Opened, Any], Awaitable[Result]]


OPERATIONS: dict[str, Operation] = {
    "documents-list": Operation(OnWorkspace, "database", documents_list),
    "documents-delete": Operation(DeleteDocument, "services", documents_delete),
    "keys-create": Operation(OnWorkspace, "database", keys_create),
    "keys-list": Operation(OnWorkspace, "database", keys_list),
    "keys-revoke": Operation(RevokeKey, "database", keys_revoke),
    "search": Operation(Search, "services", search),
    "ask": Operation(Ask, "assistant", ask),
    "ping": Operation(Nothing, "database", ping),
}
"""The operations by the name the service serves each under (``/admin/v1/<name>``)."""
