""":class:`~convrag.stores.database.Database` in memory, for the routers' unit tests
(:mod:`tests.api.fakes` serves the app over it): the same shape, one store per concept
(``db.workspaces``, ``db.documents``, ``db.originals``, ``db.conversations``,
``db.turns``, ``db.feedback``, ``db.transcripts``) beside the database's own methods,
with the methods the routes (and the turn runner, and a conversation's delete) call, by
the same names.

Every store reads and writes the one set of tables, :class:`FakeRows`, in plain dicts; a
test seeds and inspects them there (``stack.db.rows.documents``), or seeds through a
store's ``add_*`` helper. Each store keeps the behaviour of the real one where a route
depends on it (workspace isolation, keyset pages, one rating per answer, a delete mark).
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from langgraph.checkpoint.memory import InMemorySaver

from convrag.ids import canonical_uuid
from convrag.records import Citation, SourceOut, StoredSource, TurnMetadata
from convrag.stores.base import After
from convrag.stores.citations import CitedSource
from convrag.stores.conversations import title_from_question
from convrag.stores.feedback import FeedbackRecord
from convrag.stores.records import ConversationRecord, Transcript, TurnRecord, TurnStatus

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
class FakeRows:
    """The tables every fake store shares, and the fake clock."""

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
    transcripts: dict[tuple[str, str], str] = field(default_factory=dict)
    """The conversation of each remembered chat, by ``(workspace, transcript hash)``."""
    originals: dict[str, tuple[str, str, bytes]] = field(default_factory=dict)
    """Each kept upload's ``(workspace, file name, bytes)`` by its key."""
    _clock: datetime = EPOCH

    def now(self) -> datetime:
        """The fake clock: a second later at each call, so orders never tie."""
        self._clock += timedelta(seconds=1)
        return self._clock

    def owned(self, workspace_id: str, conversation_id: str) -> _Conversation | None:
        c = self.conversations.get(conversation_id)
        return c if c is not None and c.workspace_id == workspace_id else None

    def turns_of(
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

    def owned_turn(self, workspace_id: str, turn_id: str) -> _Turn | None:
        t = self.turns.get(turn_id)
        return t if t is not None and t.workspace_id == workspace_id else None

    def document(self, workspace_id: str, document_id: str) -> dict[str, Any] | None:
        row = self.documents.get(canonical_uuid(document_id) or document_id)
        return row if row is not None and row["workspace_id"] == workspace_id else None


@dataclass
class FakeWorkspaces:
    """:class:`~convrag.stores.workspaces.WorkspaceStore`: API keys and the rate limit."""

    rows: FakeRows

    async def create_api_key(self, workspace_id: str) -> str:
        key = "crk_" + secrets.token_urlsafe(16)
        self.rows.keys[key] = workspace_id
        return key

    async def workspace_for_key(self, key: str) -> str | None:
        return self.rows.keys.get(key)

    async def take_request_token(self, key: str, capacity: int) -> float | None:
        """None while the key has made at most ``capacity`` requests, else the seconds
        until one more is allowed (the bucket is never refilled here)."""
        requests = self.rows.requests
        requests[key] = requests.get(key, 0) + 1
        return None if requests[key] <= capacity else 60.0 / capacity

    async def notify(self, channel: str, payload: str) -> None:
        pass


@dataclass
class FakeConversations:
    """:class:`~convrag.stores.conversations.ConversationStore`."""

    rows: FakeRows

    async def create_conversation(
        self, workspace_id: str, conversation_id: str | None = None
    ) -> str:
        cid = conversation_id or str(uuid.uuid4())
        if cid not in self.rows.conversations:
            at = self.rows.now()
            self.rows.conversations[cid] = _Conversation(workspace_id, at, at)
        return cid

    async def conversation_exists(self, workspace_id: str, conversation_id: str) -> bool:
        return self.rows.owned(workspace_id, conversation_id) is not None

    def _record(self, conversation_id: str) -> ConversationRecord:
        c = self.rows.conversations[conversation_id]
        turns = self.rows.turns_of(c.workspace_id, conversation_id, ("done", "failed"))
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
        if self.rows.owned(workspace_id, conversation_id) is None:
            return None
        return self._record(conversation_id)

    async def list_conversations(
        self, workspace_id: str, *, limit: int, after: After | None = None
    ) -> list[ConversationRecord]:
        """Most recently active first, after the ``(updated_at, id)`` position ``after``."""
        rows = [
            self._record(cid)
            for cid, c in self.rows.conversations.items()
            if c.workspace_id == workspace_id
        ]
        rows.sort(key=lambda r: (r.updated_at, r.id), reverse=True)
        if after is not None:
            rows = [r for r in rows if (r.updated_at, r.id) < after]
        return rows[:limit]

    async def rename_conversation(
        self, workspace_id: str, conversation_id: str, title: str
    ) -> ConversationRecord | None:
        c = self.rows.owned(workspace_id, conversation_id)
        if c is None:
            return None
        c.title = title
        return self._record(conversation_id)

    async def mark_deleting(self, workspace_id: str, conversation_id: str) -> bool:
        c = self.rows.owned(workspace_id, conversation_id)
        if c is None:
            return False
        c.deleting = True
        return True

    async def unmark_deleting(self, workspace_id: str, conversation_id: str) -> None:
        if (c := self.rows.owned(workspace_id, conversation_id)) is not None:
            c.deleting = False

    async def departing_conversations(self, conversation_ids: Sequence[str]) -> set[str]:
        conversations = self.rows.conversations
        return {
            cid
            for cid in conversation_ids
            if cid not in conversations or conversations[cid].deleting
        }

    async def delete_conversation(self, workspace_id: str, conversation_id: str) -> bool:
        if self.rows.owned(workspace_id, conversation_id) is None:
            return False
        del self.rows.conversations[conversation_id]
        for turn_id in [
            t for t, turn in self.rows.turns.items() if turn.conversation_id == conversation_id
        ]:
            del self.rows.turns[turn_id]
            self.rows.feedback.pop(turn_id, None)
        return True

    async def remember_transcript(
        self, workspace_id: str, conversation_id: str, transcript_hash: str
    ) -> None:
        if self.rows.owned(workspace_id, conversation_id) is not None:
            self.rows.transcripts[(workspace_id, transcript_hash)] = conversation_id

    async def conversation_of_transcript(
        self, workspace_id: str, transcript_hash: str
    ) -> str | None:
        found = self.rows.transcripts.get((workspace_id, transcript_hash))
        return found if found in self.rows.conversations else None


@dataclass
class FakeTurns:
    """:class:`~convrag.stores.turns.TurnStore`, and :meth:`add_turn` to seed one."""

    rows: FakeRows

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
        earlier = [t for t in self.rows.turns.values() if t.conversation_id == conversation_id]
        previous = self.rows.turns.get(turn_id)
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
            created_at=previous.record.created_at if previous else self.rows.now(),
            status=status,
            error=error,
            intent="standalone" if status == "done" else None,
        )
        self.rows.turns[turn_id] = _Turn(workspace_id, conversation_id, record, list(citations))
        self.rows.conversations[conversation_id].updated_at = self.rows.now()
        return record

    async def get_turn(
        self, workspace_id: str, conversation_id: str, turn_id: str
    ) -> TurnRecord | None:
        t = self.rows.owned_turn(workspace_id, turn_id)
        if t is None or t.conversation_id != conversation_id:
            return None
        return replace(t.record)

    async def fail_turn(self, workspace_id: str, turn_id: str, reason: str) -> bool:
        t = self.rows.owned_turn(workspace_id, turn_id)
        if t is None or t.record.status != "processing":
            return False
        t.record.status, t.record.error = "failed", reason
        return True

    async def turn_orphaned(self, turn_id: str, older_than: timedelta) -> bool:
        return False

    async def turn_answered_elsewhere(self, workspace_id: str, conversation_id: str) -> str | None:
        return None  # one process: no other one answers


@dataclass
class FakeFeedback:
    """:class:`~convrag.stores.feedback.FeedbackStore`: one rating per answer."""

    rows: FakeRows

    async def save_feedback(
        self,
        workspace_id: str,
        message_id: str,
        rating: Literal["up", "down"],
        comment: str | None,
    ) -> FeedbackRecord | None:
        if self.rows.owned_turn(workspace_id, message_id) is None:
            return None
        stored = FeedbackRecord(message_id, rating, comment, self.rows.now())
        self.rows.feedback[message_id] = stored
        return stored


@dataclass
class FakeTranscripts:
    """:class:`~convrag.stores.transcripts.TranscriptStore`: answers read back with their
    feedback and citations, and whole conversations."""

    rows: FakeRows
    conversations: FakeConversations

    async def citations(self, workspace_id: str, message_id: str) -> list[Citation] | None:
        t = self.rows.owned_turn(workspace_id, canonical_uuid(message_id) or message_id)
        return None if t is None else list(t.citations)

    async def turn_details(
        self, workspace_id: str, conversation_id: str, *, cited_sources: bool = False
    ) -> list[TurnRecord]:
        details = []
        for t in self.rows.turns_of(workspace_id, conversation_id, ("done", "failed")):
            record = replace(t.record, feedback=self.rows.feedback.get(t.record.id))
            if cited_sources:
                record.cited_sources = [_cited(record, c) for c in t.citations]
            details.append(record)
        return details

    async def transcript(self, workspace_id: str, conversation_id: str) -> Transcript | None:
        conversation = await self.conversations.get_conversation(workspace_id, conversation_id)
        if conversation is None:
            return None
        turns = await self.turn_details(workspace_id, conversation_id, cited_sources=True)
        return Transcript(conversation, turns)


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
class FakeDocuments:
    """:class:`~convrag.stores.documents.DocumentStore`, and :meth:`add_document` to seed
    one."""

    rows: FakeRows

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
        at = self.rows.now()
        row = _document_row(
            document_id, workspace_id, source, status=status, title=title, error=error, at=at
        )
        row["updated_at"] = updated_at or at
        row["n_chunks"] = 1 if text else 0
        self.rows.documents[document_id] = row
        self.rows.texts[document_id] = text
        return document_id

    async def get_document(self, workspace_id: str, document_id: str) -> dict[str, Any] | None:
        row = self.rows.document(workspace_id, document_id)
        return None if row is None else dict(row)

    async def get_documents(
        self, workspace_id: str, document_ids: Sequence[str]
    ) -> list[dict[str, Any]]:
        rows = (self.rows.document(workspace_id, d) for d in dict.fromkeys(document_ids))
        return [dict(r) for r in rows if r is not None]

    async def list_documents(
        self, workspace_id: str, *, limit: int | None = None, after: After | None = None
    ) -> list[dict[str, Any]]:
        """Oldest first, after the ``(created_at, id)`` position ``after``."""
        rows = [dict(r) for r in self.rows.documents.values() if r["workspace_id"] == workspace_id]
        rows.sort(key=lambda r: (r["created_at"], r["id"]))
        if after is not None:
            rows = [r for r in rows if (r["created_at"], r["id"]) > after]
        return rows if limit is None else rows[:limit]

    async def document_text(self, workspace_id: str, document_id: str) -> str | None:
        row = self.rows.document(workspace_id, document_id)
        return None if row is None else self.rows.texts.get(row["id"], "")

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
        at = self.rows.now()
        row = next(
            (
                r
                for r in self.rows.documents.values()
                if r["workspace_id"] == workspace_id and r["source"] == source
            ),
            None,
        )
        if row is None:
            row = _document_row(
                document_id, workspace_id, source, status=status, title=title, error=error, at=at
            )
            row["metadata"] = metadata or {}
            self.rows.documents[document_id] = row
        row.update(status=status, title=title, error=error, updated_at=at)
        row.update(progress_started_at=None, progress_at=None)
        row["upload_path"] = upload_path or row["upload_path"]

    async def set_document_progress(
        self, workspace_id: str, document_id: str, done: int, total: int
    ) -> None:
        if (row := self.rows.document(workspace_id, document_id)) is not None:
            at = self.rows.now()
            if row["progress_started_at"] is None:
                row.update(progress_started_at=at, progress_started_chunks=done)
            row.update(n_chunks=done, chunks_total=total, progress_at=at, updated_at=at)

    async def mark_stopped(self, workspace_id: str, document_ids: Sequence[str]) -> None:
        pass

    async def upload_in_use(self, workspace_id: str, upload_path: str) -> bool:
        return any(
            r["workspace_id"] == workspace_id and r["upload_path"] == upload_path
            for r in self.rows.documents.values()
        )

    async def delete_document(self, workspace_id: str, document_id: str) -> bool:
        row = self.rows.document(workspace_id, document_id)
        if row is None:
            return False
        del self.rows.documents[row["id"]]
        self.rows.texts.pop(row["id"], None)
        return True


class FakeOriginals:
    """The kept uploads, whole in memory."""

    def __init__(self, rows: FakeRows) -> None:
        self.rows = rows

    async def save(self, workspace_id: str, path: Path) -> str:
        key = str(uuid.uuid4())
        self.rows.originals[key] = (workspace_id, path.name, path.read_bytes())
        return key

    async def delete(self, workspace_id: str, key: str, *, unless_used: bool = False) -> bool:
        kept = self.rows.originals.get(key)
        used = any(
            r["workspace_id"] == workspace_id and r["upload_path"] == key
            for r in self.rows.documents.values()
        )
        if kept is None or kept[0] != workspace_id or (unless_used and used):
            return False
        del self.rows.originals[key]
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


class FakeDatabase:
    """The database: its stores over one :class:`FakeRows`, and its own methods (the
    liveness check, the checkpoints)."""

    def __init__(self) -> None:
        self.rows = FakeRows()
        self.up = True
        """Whether the database answers :meth:`ping`."""
        self.checkpoints = InMemorySaver()
        self.workspaces = FakeWorkspaces(self.rows)
        self.documents = FakeDocuments(self.rows)
        self.originals = FakeOriginals(self.rows)
        self.conversations = FakeConversations(self.rows)
        self.turns = FakeTurns(self.rows)
        self.feedback = FakeFeedback(self.rows)
        self.transcripts = FakeTranscripts(self.rows, self.conversations)

    async def ping(self, *, timeout: float = 2.0) -> bool:
        return self.up

    async def delete_checkpoints(self, conversation_id: str) -> None:
        await self.checkpoints.adelete_thread(conversation_id)

    async def prune_checkpoints(self, thread_id: str) -> bool:
        return True
