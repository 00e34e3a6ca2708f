"""The replies a turn's run builds: its ``done`` event, its JSON reply, and the error that
a failed run is answered with.

Both routes that answer (``POST /v1/conversations/{id}/messages`` and
``POST /v1/chat/completions``) build their JSON reply with :func:`answer_out`, so the two
give the same answer in the same shape; a stream ends with the ``done`` event whose data
:func:`done_data` builds, whether the run just answered (:func:`state_done`) or the
answer was read back from the store (:func:`done_event` of :func:`stored_answer`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import HTTPException

from convrag.api.errors import not_found, unavailable
from convrag.api.schemas import AnswerOut, CitationOut
from convrag.api.turn_stream import DoneEvent, ErrorCode, ErrorEvent
from convrag.assistant import conflicts
from convrag.embeddings import EmbeddingMismatch
from convrag.records import Assurance, Citation, SourceOut, assurance_of
from convrag.state import repetition_detected
from convrag.stores.records import TurnRecord


@dataclass
class TurnResult:
    """What a finished turn produced (``state`` is the graph's final state)."""

    state: dict[str, Any] = field(default_factory=dict)
    sources: list[SourceOut] = field(default_factory=list)
    error: ErrorEvent | None = None
    stored: AnswerOut | None = None
    """The reply read back from the store, when the run failed after ``persist`` had
    stored its answer (:meth:`~convrag.api.turns.TurnRunner.answered_anyway`)."""
    unavailable: str | None = None
    """What the 503 of a failed turn says (:func:`~convrag.api.errors.plain_reason`): the
    ``error`` event's short reason may name an exception's class."""


def failure_code(exc: Exception) -> ErrorCode:
    """The ``code`` of the ``error`` event of a run that raised ``exc``; :func:`answer_out`
    maps it to the HTTP status of the JSON reply."""
    if conflicts(exc):
        return "conflict"
    if isinstance(exc, PermissionError):
        return "not_found"
    if isinstance(exc, EmbeddingMismatch):
        return "turn_failed"  # the service's configuration, not the request: a 503
    if isinstance(exc, ValueError):
        return "invalid_request"
    return "turn_failed"


def citations_out(citations: list[Citation]) -> list[CitationOut]:
    """Stored or streamed citations as clients read them: the one place a
    :class:`~convrag.records.Citation` becomes a :class:`CitationOut`."""
    return [CitationOut.model_validate(c) for c in citations]


def done_data(
    *,
    turn_id: str | None,
    answer: str,
    citations: list[CitationOut],
    timings_ms: dict[str, float],
    repetition_detected: bool,
    no_answer: bool,
    confidence: Assurance,
    flags: dict[str, Any],
) -> DoneEvent:
    """The ``done`` event that ends a turn's stream: the one place it is built, for a
    turn just answered (:func:`state_done`) and one read back (:func:`done_event`)."""
    return DoneEvent(
        event="done",
        turn_id=turn_id,
        answer=answer,
        citations=citations,
        timings_ms=timings_ms,
        repetition_detected=repetition_detected,
        no_answer=no_answer,
        confidence=confidence,
        flags=flags,
    )


def state_done(state: dict[str, Any]) -> DoneEvent:
    """The ``done`` event of a run that ended with the graph's final ``state``."""
    flags = state.get("flags", {})
    return done_data(
        turn_id=state.get("turn_id"),
        answer=state.get("answer", ""),
        citations=citations_out(state.get("citations", [])),
        timings_ms=state.get("timings", {}),
        repetition_detected=repetition_detected(state),
        no_answer=bool(flags.get("no_answer")),
        confidence=assurance_of(flags),
        flags=flags,
    )


def done_event(answer: AnswerOut) -> DoneEvent:
    """The ``done`` event that ends a stream answering ``answer``."""
    return done_data(
        turn_id=answer.turn_id,
        answer=answer.answer,
        citations=list(answer.citations),
        timings_ms=answer.timings_ms,
        repetition_detected=answer.repetition_detected,
        no_answer=answer.no_answer,
        confidence=answer.confidence,
        flags=answer.flags,
    )


def refusal(conversation_id: str, error: ErrorEvent, reason: str | None) -> HTTPException:
    """The HTTP error of a run that ended on ``error`` (its ``error`` event's data;
    ``reason``: what a 503 says instead of its message, when set). Bad input was refused
    before the turn started (422, 404, 409); a failed turn means a store or provider is
    down: 503, retryable."""
    code, message = error["code"], error["message"]
    if code == "not_found":
        return not_found("conversation", conversation_id)
    if code == "conflict":
        return HTTPException(409, message)
    if code == "turn_failed":
        return unavailable(reason or message)
    if code == "shutting_down":
        return unavailable(message)
    if code == "stopped":
        return HTTPException(409, f"the answer was stopped ({message})")
    return HTTPException(422, message)


def answer_out(conversation_id: str, result: TurnResult) -> AnswerOut:
    """The JSON reply of a finished turn, or the HTTP error its failure maps to."""
    if result.stored is not None:
        return result.stored
    if result.error:
        raise refusal(conversation_id, result.error, result.unavailable)
    s = result.state
    flags = s.get("flags", {})
    return AnswerOut(
        conversation_id=conversation_id,
        turn_id=s["turn_id"],
        answer=s.get("answer", ""),
        classification=s.get("classification", "standalone"),
        rewritten_query=s.get("rewritten_query", s.get("message", "")),
        sources=result.sources,
        citations=citations_out(s.get("citations", [])),
        repetition_detected=repetition_detected(s),
        no_answer=bool(flags.get("no_answer")),
        confidence=assurance_of(flags),
        flags=flags,
        timings_ms=s.get("timings", {}),
    )


def stored_answer(conversation_id: str, turn: TurnRecord, citations: list[Citation]) -> AnswerOut:
    """The reply of an answered (``done``) turn read back from the store: what a retry
    of its message gets instead of a second run. Its sources are those stored with the
    turn, each with the snippet its citation kept (empty for one the answer did not
    cite)."""
    snippets = {c["source_index"]: c["snippet"] for c in citations}
    sources = [s.out(snippets.get(s.n, "")) for s in turn.sources]
    return AnswerOut(
        conversation_id=conversation_id,
        turn_id=turn.id,
        answer=turn.answer,
        classification=turn.intent or "standalone",
        rewritten_query=turn.contextualized_query or turn.question,
        sources=sources,
        citations=citations_out(citations),
        repetition_detected=turn.repetition_detected,
        no_answer=turn.no_answer,
        confidence=turn.assurance,
        flags=turn.flags,
        timings_ms=dict(turn.metadata.timings_ms),
    )
