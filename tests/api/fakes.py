"""In-memory fakes of what the HTTP routes reach, for the routers' unit tests: the
database (API keys, rate limit, conversations, turns, citations, feedback, documents),
the vector index, the embedders and the graph. No embedded server
runs and no process starts: :func:`fake_app` serves the real app (``create_app``) over
them, and :func:`client` talks to it in-process (httpx's ``ASGITransport``).

Each fake keeps only what a route reads back, in plain dicts, with the behaviour of the
store it stands for where a route depends on it (workspace isolation, keyset pages,
one rating per answer, a delete mark). The searcher is not faked: no route reaches it
(the turns do, through the graph, which :class:`FixedAnswerGraph` stands in for).
"""

from __future__ import annotations

import asyncio
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

import httpx
from fastapi import FastAPI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from convrag.api.app import create_app, share
from convrag.assistant import Assistant
from convrag.config import Settings
from convrag.context import Context
from convrag.embeddings import BulkEmbedder, Embedder, RoundRobin
from convrag.ids import canonical_uuid
from convrag.records import Citation, SourceOut, StoredSource, TurnMetadata
from convrag.retrieval.search import HybridSearcher
from convrag.services import Services
from convrag.state import InputState
from convrag.stores.base import After
from convrag.stores.citations import CitedSource
from convrag.stores.conversations import title_from_question
from convrag.stores.database import Database
from convrag.stores.feedback import FeedbackRecord
from convrag.stores.records import ConversationRecord, Transcript, TurnRecord, TurnStatus
from convrag.stores.vectors import VectorIndex
from tests.samples import cited

T = TypeVar("T")

#: The time the fake clock starts at; each write moves it on by a second.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class _Conversation:
    workspace_id: str
    created_at: datetime
    updated_at: datetime
    title: str | None = None
    deleting: bool = False


@dataclass
class _Turn:
    workspace_id: str
    conversation_id: str
    record: TurnRecord
    citations: list[Citation] = field(default_factory=list)


@dataclass
class FakeDatabase:
    """:class:`~convrag.stores.database.Database` in memory: the methods the routes (and
    the turn runner, and a conversation's delete) call, by the same names."""

    keys: dict[str, str] = field(default_factory=dict)
    """Workspace by API key."""
    conversations: dict[str, _Conversation] = field(default_factory=dict)
    turns: dict[str, _Turn] = field(default_factory=dict)
    feedback: dict[str, FeedbackRecord] = field(default_factory=dict)
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Document rows by id, with the columns of the ``documents`` table."""
    texts: dict[str, str] = field(default_factory=dict)
    """A ready document's text by its id (its chunks joined)."""
    requests: dict[str, int] = field(default_factory=dict)
    """Requests counted per key by the rate limit."""
    up: bool = True
    """Whether the database answers :meth:`ping`."""
    checkpoints: InMemorySaver = field(default_factory=InMemorySaver)
    transcripts: dict[tuple[str, str], str] = field(default_factory=dict)
    """The conversation of each remembered chat, by ``(workspace, transcript hash)``."""
    _clock: datetime = EPOCH

    def now(self) -> datetime:
        """The fake clock: a second later at each call, so orders never tie."""
        self._clock += timedelta(seconds=1)
        return self._clock

    # -- API keys and the rate limit -------------------------------------------

    async def create_api_key(self, workspace_id: str) -> str:
        key = "crk_" + secrets.token_urlsafe(16)
        self.keys[key] = workspace_id
        return key

    async def workspace_for_key(self, key: str) -> str | None:
        return self.keys.get(key)

    async def take_request_token(self, key: str, capacity: int) -> float | None:
        """None while the key has made at most ``capacity`` requests, else the seconds
        until one more is allowed (the bucket is never refilled here)."""
        self.requests[key] = self.requests.get(key, 0) + 1
        return None if self.requests[key] <= capacity else 60.0 / capacity

    async def ping(self, *, timeout: float = 2.0) -> bool:
        return self.up

    async def notify(self, channel: str, payload: str) -> None:
        pass

    # -- conversations ----------------------------------------------------------

    def _owned(self, workspace_id: str, conversation_id: str) -> _Conversation | None:
        c = self.conversations.get(conversation_id)
        return c if c is not None and c.workspace_id == workspace_id else None

    async def create_conversation(
        self, workspace_id: str, conversation_id: str | None = None
    ) -> str:
        cid = conversation_id or str(uuid.uuid4())
        if cid not in self.conversations:
            at = self.now()
            self.conversations[cid] = _Conversation(workspace_id, at, at)
        return cid

    async def conversation_exists(self, workspace_id: str, conversation_id: str) -> bool:
        return self._owned(workspace_id, conversation_id) is not None

    def _record(self, conversation_id: str) -> ConversationRecord:
        c = self.conversations[conversation_id]
        turns = self._turns_of(c.workspace_id, conversation_id, ("done", "failed"))
        first = turns[0].record.question if turns else None
        return ConversationRecord(
            id=conversation_id,
            title=c.title or title_from_question(first),
            created_at=c.created_at,
            updated_at=c.updated_at,
            turn_count=len(turns),
        )

    async def get_conversation(
        self, workspace_id: str, conversation_id: str
    ) -> ConversationRecord | None:
        if self._owned(workspace_id, conversation_id) is None:
            return None
        return self._record(conversation_id)

    async def list_conversations(
        self, workspace_id: str, *, limit: int, after: After | None = None
    ) -> list[ConversationRecord]:
        """Most recently active first, after the ``(updated_at, id)`` position ``after``."""
        rows = [
            self._record(cid)
            for cid, c in self.conversations.items()
            if c.workspace_id == workspace_id
        ]
        rows.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        if after is not None:
            rows = [r for r in rows if (r.updated_at, r.id) < after]
        return rows[:limit]

    async def rename_conversation(
        self, workspace_id: str, conversation_id: str, title: str
    ) -> ConversationRecord | None:
        c = self._owned(workspace_id, conversation_id)
        if c is None:
            return None
        c.title = title
        return self._record(conversation_id)

    async def mark_deleting(self, workspace_id: str, conversation_id: str) -> bool:
        c = self._owned(workspace_id, conversation_id)
        if c is None:
            return False
        c.deleting = True
        return True

    async def unmark_deleting(self, workspace_id: str, conversation_id: str) -> None:
        if (c := self._owned(workspace_id, conversation_id)) is not None:
            c.deleting = False

    async def departing_conversations(self, conversation_ids: Sequence[str]) -> set[str]:
        return {
            cid
            for cid in conversation_ids
            if cid not in self.conversations or self.conversations[cid].deleting
        }

    async def delete_checkpoints(self, conversation_id: str) -> None:
        await self.checkpoints.adelete_thread(conversation_id)

    async def prune_checkpoints(self, thread_id: str) -> bool:
        return True

    async def delete_conversation(self, workspace_id: str, conversation_id: str) -> bool:
        if self._owned(workspace_id, conversation_id) is None:
            return False
        del self.conversations[conversation_id]
        for turn_id in [
            t for t, turn in self.turns.items() if turn.conversation_id == conversation_id
        ]:
            del self.turns[turn_id]
            self.feedback.pop(turn_id, None)
        return True

    async def remember_transcript(
        self, workspace_id: str, conversation_id: str, transcript_hash: str
    ) -> None:
        if self._owned(workspace_id, conversation_id) is not None:
            self.transcripts[(workspace_id, transcript_hash)] = conversation_id

    async def conversation_of_transcript(
        self, workspace_id: str, transcript_hash: str
    ) -> str | None:
        found = self.transcripts.get((workspace_id, transcript_hash))
        return found if found in self.conversations else None

    # -- turns, citations, feedback --------------------------------------------

    def add_turn(
        self,
        workspace_id: str,
        conversation_id: str,
        question: str,
        answer: str = "",
        *,
        turn_id: str | None = None,
        status: TurnStatus = "done",
        sources: Sequence[SourceOut] = (),
        citations: Sequence[Citation] = (),
        error: str | None = None,
    ) -> TurnRecord:
        """Store a turn (as ``start_turn``, ``complete_turn`` or ``fail_turn`` leave it),
        replacing one of the same id, and move the conversation's last activity."""
        turn_id = turn_id or str(uuid.uuid4())
        earlier = [t for t in self.turns.values() if t.conversation_id == conversation_id]
        previous = self.turns.get(turn_id)
        record = TurnRecord(
            id=turn_id,
            turn_number=previous.record.turn_number if previous else len(earlier) + 1,
            question=question,
            answer=answer,
            contextualized_query=None,
            entities_mentioned=[],
            sources=[StoredSource.model_validate(dict(s)) for s in sources],
            web_search_triggered=False,
            repetition_detected=False,
            metadata=TurnMetadata(timings_ms={"total": 1.0}),
            created_at=previous.record.created_at if previous else self.now(),
            status=status,
            error=error,
            intent="standalone" if status == "done" else None,
        )
        self.turns[turn_id] = _Turn(workspace_id, conversation_id, record, list(citations))
        self.conversations[conversation_id].updated_at = self.now()
        return record

    def _turns_of(
        self, workspace_id: str, conversation_id: str, statuses: Sequence[TurnStatus]
    ) -> list[_Turn]:
        found = [
            t
            for t in self.turns.values()
            if t.workspace_id == workspace_id
            and t.conversation_id == conversation_id
            and t.record.status in statuses
        ]
        return sorted(found, key=lambda t: t.record.turn_number)

    def _owned_turn(self, workspace_id: str, turn_id: str) -> _Turn | None:
        t = self.turns.get(turn_id)
        return t if t is not None and t.workspace_id == workspace_id else None

    async def get_turn(
        self, workspace_id: str, conversation_id: str, turn_id: str
    ) -> TurnRecord | None:
        t = self._owned_turn(workspace_id, turn_id)
        if t is None or t.conversation_id != conversation_id:
            return None
        return replace(t.record)

    async def fail_turn(self, workspace_id: str, turn_id: str, reason: str) -> bool:
        t = self._owned_turn(workspace_id, turn_id)
        if t is None or t.record.status != "processing":
            return False
        t.record.status, t.record.error = "failed", reason
        return True

    async def turn_orphaned(self, turn_id: str, older_than: timedelta) -> bool:
        return False

    async def turn_answered_elsewhere(self, workspace_id: str, conversation_id: str) -> str | None:
        return None  # one process: no other one answers

    async def citations(self, workspace_id: str, message_id: str) -> list[Citation] | None:
        t = self._owned_turn(workspace_id, canonical_uuid(message_id) or message_id)
        return None if t is None else list(t.citations)

    async def save_feedback(
        self,
        workspace_id: str,
        message_id: str,
        rating: Literal["up", "down"],
        comment: str | None,
    ) -> FeedbackRecord | None:
        if self._owned_turn(workspace_id, message_id) is None:
            return None
        stored = FeedbackRecord(message_id, rating, comment, self.now())
        self.feedback[message_id] = stored
        return stored

    async def turn_details(
        self, workspace_id: str, conversation_id: str, *, cited_sources: bool = False
    ) -> list[TurnRecord]:
        details = []
        for t in self._turns_of(workspace_id, conversation_id, ("done", "failed")):
            record = replace(t.record, feedback=self.feedback.get(t.record.id))
            if cited_sources:
                record.cited_sources = [_cited(record, c) for c in t.citations]
            details.append(record)
        return details

    async def transcript(self, workspace_id: str, conversation_id: str) -> Transcript | None:
        conversation = await self.get_conversation(workspace_id, conversation_id)
        if conversation is None:
            return None
        turns = await self.turn_details(workspace_id, conversation_id, cited_sources=True)
        return Transcript(conversation, turns)

    # -- documents -------------------------------------------------------------

    def add_document(
        self,
        workspace_id: str,
        source: str,
        *,
        text: str = "",
        status: str = "ready",
        title: str | None = None,
        error: str | None = None,
        updated_at: datetime | None = None,
    ) -> str:
        """Store a document row (and its text, as its chunks joined); its id."""
        document_id = str(uuid.uuid4())
        at = self.now()
        self.documents[document_id] = _document_row(
            document_id, workspace_id, source, status=status, title=title, error=error, at=at
        )
        self.documents[document_id]["updated_at"] = updated_at or at
        self.documents[document_id]["n_chunks"] = 1 if text else 0
        self.texts[document_id] = text
        return document_id

    def _document(self, workspace_id: str, document_id: str) -> dict[str, Any] | None:
        row = self.documents.get(canonical_uuid(document_id) or document_id)
        return row if row is not None and row["workspace_id"] == workspace_id else None

    async def get_document(self, workspace_id: str, document_id: str) -> dict[str, Any] | None:
        row = self._document(workspace_id, document_id)
        return None if row is None else dict(row)

    async def get_documents(
        self, workspace_id: str, document_ids: Sequence[str]
    ) -> list[dict[str, Any]]:
        rows = (self._document(workspace_id, d) for d in dict.fromkeys(document_ids))
        return [dict(r) for r in rows if r is not None]

    async def list_documents(
        self, workspace_id: str, *, limit: int | None = None, after: After | None = None
    ) -> list[dict[str, Any]]:
        """Oldest first, after the ``(created_at, id)`` position ``after``."""
        rows = [dict(r) for r in self.documents.values() if r["workspace_id"] == workspace_id]
        rows.sort(key=lambda r: (r["created_at"], r["id"]))
        if after is not None:
            rows = [r for r in rows if (r["created_at"], r["id"]) > after]
        return rows if limit is None else rows[:limit]

    async def document_text(self, workspace_id: str, document_id: str) -> str | None:
        row = self._document(workspace_id, document_id)
        return None if row is None else self.texts.get(row["id"], "")

    async def upsert_document_status(
        self,
        workspace_id: str,
        document_id: str,
        source: str,
        *,
        status: str,
        title: str | None = None,
        content_hash: str = "",
        error: str | None = None,
        metadata: dict[str, Any] | None = None,
        upload_path: str | None = None,
    ) -> None:
        at = self.now()
        row = next(
            (
                r
                for r in self.documents.values()
                if r["workspace_id"] == workspace_id and r["source"] == source
            ),
            None,
        )
        if row is None:
            row = _document_row(
                document_id, workspace_id, source, status=status, title=title, error=error, at=at
            )
            row["metadata"] = metadata or {}
            self.documents[document_id] = row
        row.update(status=status, title=title, error=error, updated_at=at)
        row.update(progress_started_at=None, progress_at=None)
        row["upload_path"] = upload_path or row["upload_path"]

    async def set_document_progress(
        self, workspace_id: str, document_id: str, done: int, total: int
    ) -> None:
        if (row := self._document(workspace_id, document_id)) is not None:
            at = self.now()
            if row["progress_started_at"] is None:
                row.update(progress_started_at=at, progress_started_chunks=done)
            row.update(n_chunks=done, chunks_total=total, progress_at=at, updated_at=at)

    async def mark_stopped(self, workspace_id: str, document_ids: Sequence[str]) -> None:
        pass

    async def upload_in_use(self, workspace_id: str, upload_path: str) -> bool:
        return any(
            r["workspace_id"] == workspace_id and r["upload_path"] == upload_path
            for r in self.documents.values()
        )

    async def delete_document(self, workspace_id: str, document_id: str) -> bool:
        row = self._document(workspace_id, document_id)
        if row is None:
            return False
        del self.documents[row["id"]]
        self.texts.pop(row["id"], None)
        return True


def _document_row(
    document_id: str,
    workspace_id: str,
    source: str,
    *,
    status: str,
    title: str | None,
    error: str | None,
    at: datetime,
) -> dict[str, Any]:
    """A row of the ``documents`` table, every column."""
    return {
        "id": document_id,
        "workspace_id": workspace_id,
        "source": source,
        "title": title,
        "content_hash": "",
        "metadata": {},
        "status": status,
        "error": error,
        "n_chunks": 0,
        "chunks_total": 0,
        "created_at": at,
        "updated_at": at,
        "upload_path": None,
        "interrupted": False,
        "progress_started_at": None,
        "progress_started_chunks": 0,
        "progress_at": None,
    }


def _cited(turn: TurnRecord, citation: Citation) -> CitedSource:
    """What ``citation`` of ``turn`` cites, as a transcript lists it."""
    source = turn.source(citation["source_index"])
    return CitedSource(
        marker=citation["marker"],
        source_type=citation["source_type"],
        title=source.title if source else None,
        document_id=citation["document_id"],
        page=citation.get("page"),
        url=citation["url"],
        snippet=citation["snippet"],
    )


@dataclass
class FakeIndex:
    """The vector index: says whether it is usable, and records the deletes asked of it."""

    problem_text: str | None = None
    deleted: list[tuple[str, str]] = field(default_factory=list)
    """``(workspace, document or conversation id)`` of each delete, in order."""

    def problem(self) -> str | None:
        return self.problem_text

    def delete_document(self, workspace_id: str, document_id: str) -> None:
        self.deleted.append((workspace_id, document_id))

    def delete_conversation(self, workspace_id: str, conversation_id: str) -> None:
        self.deleted.append((workspace_id, conversation_id))


@dataclass
class FakeEmbedder:
    """An embedder by name only: no route embeds."""

    name: str = "fake-embedder"
    dim: int = 4


class FakeBulk:
    """Bulk work run in place (reading an uploaded file); it embeds nothing."""

    def __init__(self) -> None:
        self.turns = RoundRobin()

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return fn(*args, **kwargs)

    async def read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return fn(*args, **kwargs)


@dataclass
class FakeServices(Services):
    """:class:`~convrag.services.Services` whose background work is recorded, not run: an
    upload's ingest (the ingest's own tests cover it) is named in ``spawned``."""

    spawned: list[str] = field(default_factory=list)

    def spawn(self, coro: Coroutine[Any, Any, None], *, ingest_of: str | None = None) -> None:
        coro.close()
        self.spawned.append(ingest_of or "")


# -- the graph ---------------------------------------------------------------------

ANSWER = "Prasad earns 90,000 a year [1]."
"""What :class:`FixedAnswerGraph` answers every question with."""

SOURCE, CITATION = cited(
    ANSWER,
    id="7f0c1b9e-35d4-4c57-8f5c-0d5b7d7c2a11",
    source_type="document",
    score=0.9,
    document_id="4b3f7a2e-9d1c-4e8b-a6f0-2c5d8e9f1a3b",
    title="Employees",
    text="Prasad Chaudhari, salary 90,000",
    page=None,
    section=None,
)
"""The one source of its answers, and the citation of its answer's ``[1]``."""


@dataclass
class FixedAnswerGraph:
    """The compiled graph, as the turn runner streams it: every run answers
    :data:`ANSWER`, citing :data:`SOURCE`, and stores its turn in ``db`` (as
    ``load_history`` and ``persist`` do: ``processing``, then ``done``).

    With ``hold`` set, a run waits after its question is stored until the event is set
    (a turn still being answered); ``started`` is set as each run's question is stored.
    With ``fail`` set, a run raises it after its sources, as a node whose store or LLM
    failed does.
    """

    db: FakeDatabase
    hold: asyncio.Event | None = None
    fail: Exception | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    runs: list[InputState] = field(default_factory=list)

    async def astream(
        self, payload: InputState, config: Any, *, context: Context, **_: Any
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        self.runs.append(payload)
        workspace, conversation_id = context.workspace_id, payload["conversation_id"]
        request = payload["turn_request"]
        assert request is not None, "the turn runner gives every run its turn id"
        turn_id = request["turn_id"]
        question = payload["message"]
        self.db.add_turn(workspace, conversation_id, question, turn_id=turn_id, status="processing")
        self.started.set()
        yield "custom", {"event": "sources", "sources": [SOURCE]}
        if self.hold is not None:
            await self.hold.wait()
        if self.fail is not None:
            raise self.fail
        for word in ANSWER.split(" "):
            yield "custom", {"event": "token", "text": word if word == "Prasad" else f" {word}"}
        self.db.add_turn(
            workspace,
            conversation_id,
            question,
            ANSWER,
            turn_id=turn_id,
            sources=[SOURCE],
            citations=[CITATION],
        )
        yield "updates", {"persist": {}}
        yield (
            "values",
            {
                "message": question,
                "turn_id": turn_id,
                "answer": ANSWER,
                "citations": [CITATION],
                "classification": "standalone",
                "rewritten_query": question,
                "flags": {},
                "timings": {"total": 1.0},
            },
        )


# -- the app -----------------------------------------------------------------------


@dataclass
class FakeStack:
    """The fakes an app serves with, for a test to seed and to inspect."""

    db: FakeDatabase
    index: FakeIndex
    graph: FixedAnswerGraph
    services: FakeServices

    async def key(self, workspace_id: str) -> dict[str, str]:
        """The ``Authorization`` header of a new API key of ``workspace_id``."""
        return {"Authorization": f"Bearer {await self.db.create_api_key(workspace_id)}"}


@cache
def _default_settings() -> Settings:
    """The settings of the environment, read once (reading them takes tens of ms)."""
    return Settings()


def fake_stack(data_dir: Path, **settings: Any) -> FakeStack:
    """Fakes of every service the routes reach, with the default settings but
    ``data_dir`` and ``settings`` (``rate_limit_per_minute=2``...)."""
    db, index = FakeDatabase(), FakeIndex()
    embedder = FakeEmbedder()
    services = FakeServices(
        settings=_default_settings().model_copy(update={"data_dir": data_dir, **settings}),
        db=cast(Database, db),
        index=cast(VectorIndex, index),
        embedder=cast(Embedder, embedder),
        searcher=cast(HybridSearcher, None),  # no route reaches it
        database_url="",
        milvus_uri="",
        bulk=cast(BulkEmbedder, FakeBulk()),
    )
    return FakeStack(db, index, FixedAnswerGraph(db), services)


def fake_app(stack: FakeStack) -> FastAPI:
    """The real app (``create_app``) serving ``stack``, its state shared as its lifespan
    shares it (:func:`~convrag.api.app.share`), without the lifespan's start (no
    listener on a database, no recovery, no retention sweep)."""
    settings = stack.services.settings
    app = _app(settings.max_file_bytes, settings.max_body_bytes)
    graph = cast(CompiledStateGraph[Any, Any, Any, Any], stack.graph)
    share(app, Assistant(stack.services, graph))
    return app


@cache
def _app(max_file_bytes: int, max_body_bytes: int) -> FastAPI:
    """The app with these body limits, made once (making one takes tens of ms): of the
    settings, ``create_app`` reads only the limits, and :func:`fake_app` shares each
    test's services on it. Its lifespan, which would open real stores, is never run."""
    limits = {"max_file_bytes": max_file_bytes, "max_body_bytes": max_body_bytes}
    return create_app(_default_settings().model_copy(update=limits))


def client(app: FastAPI) -> httpx.AsyncClient:
    """An HTTP client of ``app``, in-process."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
