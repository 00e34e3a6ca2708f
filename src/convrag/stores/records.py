"""The records of conversations and their turns, as the stores take and return them.

Below the stores that use them (:mod:`~convrag.stores.turns`,
:mod:`~convrag.stores.conversations`, :mod:`~convrag.stores.transcripts`), so that each
imports them from here, as every caller does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from convrag.records import Assurance, Citation, StoredSource, TurnMetadata, assurance_of
from convrag.stores.citations import CitedSource
from convrag.stores.feedback import FeedbackRecord

TurnStatus = Literal["processing", "done", "failed"]
"""A turn's row exists from its start: ``processing`` while the graph runs, ``done`` once
persist wrote the answer, ``failed`` (with a reason) when the run failed or the process
that ran it is gone."""


@dataclass(slots=True)
class TurnRecord:
    """One persisted question/answer turn of a conversation.

    ``feedback`` and ``cited_sources`` are filled only by
    :meth:`~convrag.stores.transcripts.TranscriptStore.turn_details`; the graph's reads
    leave them empty.
    """

    id: str
    turn_number: int
    question: str
    answer: str
    contextualized_query: str | None
    entities_mentioned: list[str]
    sources: list[StoredSource]
    web_search_triggered: bool
    repetition_detected: bool
    metadata: TurnMetadata
    created_at: datetime
    feedback: FeedbackRecord | None = None
    cited_sources: list[CitedSource] = field(default_factory=list)
    status: TurnStatus = "done"
    """``processing`` or ``failed`` turns have no answer; history reads only ``done``."""
    error: str | None = None
    """Why a ``failed`` turn failed (short, for the client); None otherwise."""
    intent: str | None = None
    """The turn's classification (standalone, follow_up, no_retrieval), once answered."""

    def source(self, n: int) -> StoredSource | None:
        """The answer's source number ``n`` (what ``[n]`` points at); None when it has
        no such source."""
        return next((s for s in self.sources if s.n == n), None)

    @property
    def flags(self) -> dict[str, Any]:
        """The flags the turn was answered with, as its ``done`` event carried them
        (``no_answer``, ``repetition_unresolved``, ``web_search_triggered``, ...)."""
        return dict(self.metadata.flags)

    @property
    def no_answer(self) -> bool:
        """Whether the answer was the "not found" one (nothing relevant enough)."""
        return bool(self.flags.get("no_answer"))

    @property
    def assurance(self) -> Assurance:
        """How sure the answer is: ``low`` when its evidence was close to the floor."""
        return assurance_of(self.flags)


@dataclass(slots=True)
class NewTurn:
    """Everything the persist node writes for one turn, in one transaction."""

    id: str
    workspace_id: str
    conversation_id: str
    question: str
    answer: str
    contextualized_query: str | None
    entities: list[str]
    sources: list[StoredSource]
    web_search_triggered: bool
    repetition_detected: bool
    intent: str | None
    confidence: float | None
    metadata: TurnMetadata = field(default_factory=TurnMetadata)
    citations: list[Citation] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TurnStart:
    """A turn about to run: its row is written as ``processing`` by
    :meth:`~convrag.stores.turns.TurnStore.start_turn` before the graph answers it."""

    workspace_id: str
    conversation_id: str
    turn_id: str
    question: str
    idempotency_key: str | None = None
    """The client's key for retries of this message, if it sent one."""
    create: bool = True
    """Create the conversation when it is unknown (else: None, as for a foreign one)."""


@dataclass(frozen=True, slots=True)
class StartedTurn:
    """What :meth:`~convrag.stores.turns.TurnStore.start_turn` found and did."""

    history: list[TurnRecord]
    """The last answered turns, oldest first (this one not among them)."""
    prior: TurnStatus | None
    """The turn's status before this start: None for a new turn, ``failed`` for one taken
    up again, ``done`` or ``processing`` for one that was left as it is (answered, or
    being answered by another run)."""
    started: bool
    """Whether this start wrote the turn as ``processing`` (new, or a failed one again)."""
    busy: bool = False
    """Whether another turn of the conversation is being answered (by any process), so
    this one was not started: a conversation answers one message at a time."""
    deleting: bool = False
    """Whether the conversation's delete is under way (in any process), so this turn was
    not started."""


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """A conversation as listed: its title, times and number of turns."""

    id: str
    title: str | None
    """The name it was given, else
    :func:`~convrag.stores.conversations.title_from_question` of its first question; None
    for a conversation that has neither."""
    created_at: datetime
    updated_at: datetime
    """Its last activity: creation or its latest turn (a rename does not count)."""
    turn_count: int
    """Its answered and failed turns, as its detail shows them (not one still being
    answered)."""


@dataclass(frozen=True, slots=True)
class Transcript:
    """A whole conversation: its summary and every turn, with citations and feedback."""

    conversation: ConversationRecord
    turns: list[TurnRecord]
