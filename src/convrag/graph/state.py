"""The typed state that flows through the conversational graph.

Per-turn fields are reset by ``load_history`` at the start of every turn: the thread's
checkpoint keeps the last turn's values, and a new turn must not inherit them. Fields
written by the two parallel retrieval branches or by every node have explicit reducers.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

Classification = Literal["standalone", "follow_up", "no_retrieval"]


def merge_dicts(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Reducer: later keys win. Parallel branches each add their own keys."""
    return {**(left or {}), **(right or {})}


def add_timings(left: dict[str, float] | None, right: dict[str, float] | None) -> dict[str, float]:
    """Reducer: a node that runs twice in a turn (the regenerate loop) adds up its time."""
    out = dict(left or {})
    for key, value in (right or {}).items():
        out[key] = round(out.get(key, 0.0) + value, 3)
    return out


class Source(TypedDict):
    """One numbered source of an answer: a chunk, a looked-up document item, or a web page."""

    id: str
    """UUID of the chunk (or a UUID5 of the URL for web results)."""
    source_type: Literal["chunk", "document", "web", "memory"]
    document_id: str | None
    title: str | None
    text: str
    url: str | None
    score: float
    dense_score: NotRequired[float | None]
    bm25_score: NotRequired[float | None]
    anchored: NotRequired[bool]


class Citation(TypedDict):
    """A resolved ``[n]`` marker: where it sits in the answer and what it points at."""

    marker: str
    position: int
    source_index: int
    source_id: str
    source_type: str
    document_id: str | None
    url: str | None
    score: float
    snippet: str


class HistoryTurn(TypedDict):
    """An earlier turn, as loaded from Postgres."""

    turn_number: int
    question: str
    answer: str
    contextualized_query: str | None
    entities: list[str]
    cited_document_ids: list[str]


class Repetition(TypedDict):
    """The verdict of ``check_repetition`` (seed 002's RepetitionDetector)."""

    is_repetitive: bool
    repeated_entities: list[str]
    overlap_ratio: float


class Draft(TypedDict):
    """One candidate answer; regeneration keeps them all and persists the best."""

    answer: str
    overlap_ratio: float
    extractive: bool


class InputState(TypedDict):
    """What a caller sends for one turn."""

    message: str
    """The user's message, as typed."""
    conversation_id: NotRequired[str]
    """Conversation (= checkpoint thread) id; defaults to the run's ``thread_id``."""
    workspace_id: NotRequired[str]
    """Workspace whose documents answer; defaults to the run context's workspace."""
    history_override: NotRequired[list[HistoryTurn] | None]
    """Earlier turns given by the caller (the OpenAI-compatible endpoint, seed 000)
    instead of loading them from Postgres."""


class State(InputState, total=False):
    """The full state of one conversation thread."""

    turn_id: str
    """UUID of the turn being answered; fixed at load_history so a resumed run reuses it."""
    history: list[HistoryTurn]
    """The last N turns, oldest first."""
    anchor_document_ids: list[str]
    """Documents cited by the previous answer (seed 003's source anchoring)."""
    classification: Classification
    """standalone, follow_up or no_retrieval."""
    rewritten_query: str
    """The standalone query used for retrieval."""
    rewrite_method: Literal["unchanged", "rules", "llm", "fallback"]
    """How ``rewritten_query`` was produced."""
    document_hits: list[Source]
    """Exact numbered items named by the message (seed 001's document content source)."""
    vector_hits: list[Source]
    """Hybrid dense + BM25 hits, anchored on a follow-up."""
    sources: list[Source]
    """Fused, deduplicated, budgeted sources; ``[n]`` in the answer is ``sources[n-1]``."""
    retrieval_confidence: float
    """Best dense similarity of the retrieved chunks (0 when none)."""
    web_search_reason: str | None
    """Why web search ran (policy trigger), or None."""
    web_results: list[Source]
    """Web pages found by the google_search tool."""
    pending_web_query: str | None
    """A google_search call the answering LLM made, waiting for the web_search node."""
    web_search_done: bool
    """Web search already ran this turn (the tool is offered once)."""
    draft: str
    """The current candidate answer."""
    drafts: list[Draft]
    """Every candidate of this turn, in order."""
    answer: str
    """The final answer (unresolved markers removed)."""
    citations: list[Citation]
    """The resolved markers of ``answer``."""
    entities: list[str]
    """Salient entities of the current draft."""
    repetition: Repetition
    """Verdict on the current draft."""
    excluded_entities: list[str]
    """Entities a regeneration must not repeat."""
    regenerations: int
    """Regenerations done this turn (bounded by the context's max_regenerations)."""
    flags: Annotated[dict[str, Any], merge_dicts]
    """Per-turn flags: extractive_fallback, repetition_unresolved, unresolved_markers..."""
    errors: Annotated[dict[str, str], merge_dicts]
    """Per-step errors that did not fail the turn, keyed by step."""
    timings: Annotated[dict[str, float], add_timings]
    """Milliseconds spent per node this turn."""
    persisted: bool
    """Whether persist wrote the turn (False when it was already there)."""
