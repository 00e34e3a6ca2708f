"""The typed state that flows through the conversational graph, and each node's update.

Every field a turn produces belongs to that turn alone: the thread's checkpoint keeps the
last turn's values, and a new turn must not inherit them. Such fields are declared with a
:class:`PerTurn` reducer, and :func:`start_turn` (applied to the first node's update)
resets exactly those, read off this module's annotations, so a new field cannot be
forgotten. Fields written by parallel branches or by every node merge through their
reducer's ``merge``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import (
    Annotated,
    Any,
    Generic,
    Literal,
    NotRequired,
    Required,
    TypeVar,
    get_args,
    get_origin,
    get_type_hints,
)

from langgraph.channels import EphemeralValue
from langgraph.types import Overwrite
from typing_extensions import TypedDict

from convrag.records import Citation, HistoryTurn, Source

Classification = Literal["standalone", "follow_up", "no_retrieval"]
RewriteMethod = Literal["unchanged", "rules", "llm", "fallback"]
T = TypeVar("T")


def merge_dicts(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Later keys win. Parallel branches each add their own keys."""
    return {**(left or {}), **(right or {})}


def add_timings(left: dict[str, float] | None, right: dict[str, float] | None) -> dict[str, float]:
    """A node that runs twice in a turn (the regenerate loop) adds up its time."""
    out = dict(left or {})
    for key, value in (right or {}).items():
        out[key] = round(out.get(key, 0.0) + value, 3)
    return out


class PerTurn(Generic[T]):
    """Reducer of a field that lives for one turn.

    A write replaces the value, or goes through ``merge`` when given. At the start of a
    turn :func:`start_turn` overwrites the field with ``default()``.
    """

    def __init__(
        self, default: Callable[[], T], merge: Callable[[T | None, T | None], T] | None = None
    ) -> None:
        self.default = default
        self.merge = merge
        self.__name__ = f"per_turn_{getattr(merge, '__name__', 'replace')}"

    def __call__(self, left: T | None, right: T | None) -> T | None:
        return self.merge(left, right) if self.merge is not None else right


def _none() -> None:
    return None


# One instance per kind: LangGraph compares reducers by identity when a field appears in
# both the input and the full state schema.
TURN_LIST: PerTurn[Any] = PerTurn(list)
TURN_NONE: PerTurn[Any] = PerTurn(_none)
TURN_STR: PerTurn[str] = PerTurn(str)
TURN_FLOAT: PerTurn[float] = PerTurn(float)
TURN_INT: PerTurn[int] = PerTurn(int)
TURN_BOOL: PerTurn[bool] = PerTurn(bool)
TURN_MERGED: PerTurn[dict[str, Any]] = PerTurn(dict, merge_dicts)
TURN_TIMINGS: PerTurn[dict[str, float]] = PerTurn(dict, add_timings)


@cache
def per_turn_fields() -> dict[str, PerTurn[Any]]:
    """Every field of :class:`State` declared with a :class:`PerTurn` reducer."""
    found: dict[str, PerTurn[Any]] = {}
    for name, hint in get_type_hints(State, include_extras=True).items():
        if get_origin(hint) in (NotRequired, Required):
            hint = get_args(hint)[0]
        reducer = next((m for m in get_args(hint)[1:] if isinstance(m, PerTurn)), None)
        if reducer is not None:
            found[name] = reducer
    return found


def repetition_detected(state: Mapping[str, Any]) -> bool:
    """Whether a turn's answer repeated what earlier answers said: a regeneration ran, or
    the check found repetition that no regeneration was allowed to remove
    (``max_regenerations`` 0). The one definition that the stream's ``done`` event, the
    JSON reply and the stored turn share."""
    repetition = state.get("repetition")
    return bool(state.get("regenerations")) or bool(repetition and repetition["is_repetitive"])


def start_turn(update: Mapping[str, Any]) -> dict[str, Any]:
    """``update`` as the first write of a new turn: every per-turn field starts afresh.

    A write replaces a plain per-turn field. A merged one (flags, errors, timings) is
    written as ``Overwrite``, which bypasses its merge, so it starts from the update's own
    value rather than from the last turn's.
    """
    fields = per_turn_fields()
    out: dict[str, Any] = {name: r.default() for name, r in fields.items()}
    out.update(update)
    for name, reducer in fields.items():
        if reducer.merge is not None:
            out[name] = Overwrite(out[name])
    return out


class Repetition(TypedDict):
    """The verdict of ``check_repetition``."""

    is_repetitive: bool
    repeated_entities: list[str]
    overlap_ratio: float


class Draft(TypedDict):
    """One candidate answer; regeneration keeps them all and persists the best."""

    answer: str
    overlap_ratio: float
    extractive: bool
    relevance: NotRequired[float]
    """Share of the standalone query's terms the draft covers: a regeneration must not
    trade a relevant answer for a less relevant one."""


class TurnRequest(TypedDict):
    """A caller-chosen turn id, and the client key it was derived from (if any)."""

    turn_id: str
    idempotency_key: NotRequired[str | None]


class InputState(TypedDict):
    """What a caller sends for one turn."""

    message: Annotated[str, EphemeralValue]
    """The user's message, as typed. Ephemeral: only the turn's first step
    (``load_history``) reads it, and keeps it as ``question``. A run whose input has no
    message therefore finds none, rather than the thread's previous question, which it
    would answer and store again (LangGraph writes only the keys an input holds)."""
    conversation_id: NotRequired[str]
    """Conversation (= checkpoint thread) id; defaults to the run's ``thread_id``."""
    turn_request: NotRequired[Annotated[TurnRequest | None, TURN_NONE]]
    """The id (and the client's idempotency key) the caller chose for this turn, so that
    a retry maps to the same stored turn; without it ``load_history`` picks a new id.
    Per-turn: it never carries over to the next turn."""
    history_override: NotRequired[Annotated[list[HistoryTurn] | None, TURN_NONE]]
    """Earlier turns given by the caller (the OpenAI-compatible endpoint sends the whole
    conversation)
    instead of loading them from Postgres."""


class State(InputState, total=False):
    """The full state of one conversation thread."""

    question: str
    """The turn's message, stripped: what every node after ``load_history`` reads."""
    workspace_id: str
    """The run context's workspace, validated by ``load_history``."""
    turn_id: str
    """UUID of the turn being answered; fixed at load_history so a resumed run reuses it."""
    history: list[HistoryTurn]
    """The last N turns, oldest first."""
    anchor_document_ids: list[str]
    """Documents cited by the previous answer (a follow-up searches them first)."""
    classification: Classification
    """standalone, follow_up or no_retrieval."""
    rewritten_query: str
    """The standalone query used for retrieval."""
    rewrite_method: RewriteMethod
    """How ``rewritten_query`` was produced."""
    document_hits: Annotated[list[Source], TURN_LIST]
    """Exact numbered items named by the message ("explain question 6")."""
    vector_hits: Annotated[list[Source], TURN_LIST]
    """Hybrid dense + BM25 hits, anchored on a follow-up."""
    keyword_hit: Annotated[Source | None, TURN_NONE]
    """The hit the first query's keyword search ranks first, when the fusion ranks it
    below the ``top_k`` sources: weighed alone before "not found"
    (``keyword_second_look``)."""
    sources: Annotated[list[Source], TURN_LIST]
    """Fused, deduplicated, budgeted sources; ``[n]`` in the answer is ``sources[n-1]``."""
    retrieval_confidence: Annotated[float, TURN_FLOAT]
    """Best dense similarity of the retrieved chunks (0 when none)."""
    abstain: Annotated[bool, TURN_BOOL]
    """No source is relevant enough: answer "not found" unless the web finds something."""
    abstention_signals: Annotated[dict[str, float] | None, TURN_NONE]
    """The evidence behind ``abstain`` (:class:`~convrag.retrieval.evidence.Signals`),
    when it was weighed; recorded for fitting the decision."""
    merged: Annotated[bool, TURN_BOOL]
    """The retrieval hits are merged into ``sources`` (``synthesize`` merges once a turn)."""
    web_search_reason: Annotated[str | None, TURN_NONE]
    """Why web search ran (policy trigger), or None."""
    web_results: Annotated[list[Source], TURN_LIST]
    """Web pages found by the google_search tool."""
    pending_web_query: Annotated[str | None, TURN_NONE]
    """A google_search call the answering LLM made, waiting for the web_search node."""
    web_search_done: Annotated[bool, TURN_BOOL]
    """Web search already ran this turn (the tool is offered once)."""
    draft: Annotated[str, TURN_STR]
    """The current candidate answer."""
    drafts: Annotated[list[Draft], TURN_LIST]
    """Every candidate of this turn, in order."""
    answer: Annotated[str, TURN_STR]
    """The final answer (unresolved markers removed)."""
    citations: Annotated[list[Citation], TURN_LIST]
    """The resolved markers of ``answer``."""
    entities: Annotated[list[str], TURN_LIST]
    """Salient entities of the current draft."""
    repetition: Repetition
    """Verdict on the current draft."""
    excluded_entities: Annotated[list[str], TURN_LIST]
    """Entities a regeneration must not repeat."""
    regenerations: Annotated[int, TURN_INT]
    """Regenerations done this turn (bounded by the context's max_regenerations)."""
    flags: Annotated[dict[str, Any], TURN_MERGED]
    """Per-turn flags: extractive_fallback, repetition_unresolved, unresolved_markers..."""
    errors: Annotated[dict[str, str], TURN_MERGED]
    """Per-step errors that did not fail the turn, keyed by step."""
    timings: Annotated[dict[str, float], TURN_TIMINGS]
    """Milliseconds spent per node this turn, and the model time inside nodes that the
    service's latency figures count apart: ``rewrite_llm`` (the rewrite's LLM call),
    ``embed_query`` (waiting for the query's embedding) and ``embed_sentences`` (embedding
    the sources' sentences for the "not found" evidence)."""
    persisted: Annotated[bool, TURN_BOOL]
    """Whether persist wrote the turn (False when it was already there)."""


class LoadHistoryUpdate(TypedDict, total=False):
    """What ``load_history`` writes (the policy wraps it in :func:`start_turn`)."""

    question: str
    workspace_id: str
    conversation_id: str
    turn_id: str
    history: list[HistoryTurn]
    anchor_document_ids: list[str]


class RewriteUpdate(TypedDict, total=False):
    """What ``rewrite`` writes."""

    classification: Classification
    rewritten_query: str
    rewrite_method: RewriteMethod
    flags: dict[str, Any]
    errors: dict[str, str]
    timings: dict[str, float]


class DocumentHitsUpdate(TypedDict, total=False):
    """What ``retrieve_documents`` writes."""

    document_hits: list[Source]


class VectorHitsUpdate(TypedDict, total=False):
    """What ``retrieve_vectors`` writes."""

    vector_hits: list[Source]
    keyword_hit: Source | None
    flags: dict[str, Any]
    errors: dict[str, str]
    timings: dict[str, float]


class MergeUpdate(TypedDict, total=False):
    """What the merge writes (``merged_sources``, the first step of ``synthesize``): the
    sources, and the web search to run first when the policy asks for one."""

    sources: list[Source]
    retrieval_confidence: float
    abstain: bool
    abstention_signals: dict[str, float] | None
    flags: dict[str, Any]
    web_search_reason: str | None
    pending_web_query: str | None
    merged: bool
    timings: dict[str, float]


class WebSearchUpdate(TypedDict, total=False):
    """What ``web_search`` writes."""

    web_results: list[Source]
    sources: list[Source]
    pending_web_query: str | None
    web_search_done: bool
    flags: dict[str, Any]


class DraftUpdate(TypedDict, total=False):
    """What ``synthesize`` and ``regenerate`` write: a draft, or a pending tool call."""

    draft: str
    drafts: list[Draft]
    entities: list[str]
    pending_web_query: str | None
    regenerations: int
    excluded_entities: list[str]
    flags: dict[str, Any]
    errors: dict[str, str]


class SynthesizeUpdate(MergeUpdate, DraftUpdate, total=False):
    """What ``synthesize`` writes: the merge of the sources, then a draft."""


class RepetitionUpdate(TypedDict, total=False):
    """What ``check_repetition`` writes."""

    repetition: Repetition
    drafts: list[Draft]


class PersistUpdate(TypedDict, total=False):
    """What ``persist`` writes."""

    answer: str
    citations: list[Citation]
    persisted: bool
    flags: dict[str, Any]
