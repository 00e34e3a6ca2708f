"""What a run carries besides its state: the knobs that tune it and the services it uses.

The graph declares this as ``context_schema`` and every node reads it through
``Runtime.context``. Only ``thread_id`` travels in ``configurable``. ``services`` is the
run's dependency injection: the composition root (:func:`convrag.services.open_services`)
builds one :class:`~convrag.services.Services` and each surface passes it here, so two
assistants in one process never share stores by accident. It is hidden from the JSON
schema that Studio and the SDK see, and cannot be set from a mapping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from pydantic import PlainSerializer, PlainValidator
from pydantic.json_schema import SkipJsonSchema

from convrag.answering.extractive import DEFAULT_ANSWER_SENTENCES
from convrag.config import (
    DEFAULT_LLM_TIMEOUT_S,
    DEFAULT_REWRITE_TIMEOUT_S,
    DEFAULT_WEB_SEARCH_TIMEOUT_S,
)
from convrag.ids import DEFAULT_WORKSPACE
from convrag.llm import resolve_model
from convrag.rewriting.gate import check_switches
from convrag.services import Services

DEFAULT_RELEVANCE_FLOOR = 0.40
"""Fitted with :data:`DEFAULT_SENTENCE_WEIGHT` on MTRAG ClapNQ's recorded evidence (the
fewest wrong "not found"s with off-topic abstention at least 95 %), tested on Cloud and
the reading sets (BENCHMARKS.md, session 19)."""
DEFAULT_SENTENCE_WEIGHT = 0.5
"""The closest sentence's share of the evidence, the best chunk's cosine the rest: fitted
with the floor (BENCHMARKS.md, session 19). 1 was the rule before: a chunk whose one
sentence says little was "not found" however close the whole passage was."""
DEFAULT_SENTENCE_BAND = 0.10
"""Chosen by measurement with ``benchmarks/abstention_floor.py``: the narrowest band that
changes no decision on MTRAG ClapNQ (against weighing every turn's sentences), which
changes none on Cloud either. Turns under the floor always weigh them."""
DEFAULT_CONFIDENCE_MARGIN = 0.05
"""A decision whose evidence lies within this of the relevance floor, either side, is a
close call: the answer (or its "not found") is marked low confidence. Measured with
``convrag eval answers --turns`` (BENCHMARKS.md, issue 34): the answers it marks are right
less often than the rest."""
DEFAULT_RARE_TERM_PENALTY = 0.015
"""Chosen by measurement with ``convrag eval answers`` (fit on one MTRAG domain, tested
on the other; see BENCHMARKS.md)."""
DEFAULT_LATER_RARE_TERM_PENALTY = 0.005
"""The same on a conversation's later turns that are not follow-ups: there a word the
documents lack is more often the user's shorthand, a typo or a remark ("filtering msg",
"Oops, no return result") than a new subject. A follow-up keeps the first turn's penalty:
its subject is the conversation's, and a word it adds that the documents lack asks for
something they may not hold ("Is it part of the salary?"). Chosen with
``convrag eval answers`` on both MTRAG domains, each fit tested on the other (BENCHMARKS.md,
session 22)."""
DEFAULT_PARAGRAPH_WEIGHT = 0.5
"""How far a chunk's share of the evidence moves towards the cosine of the paragraph that
holds its closest sentence. MTRAG's passages are single paragraphs, so only real
documents measure it: on ``benchmarks/followups`` 0 / 0.25 / 0.5 / 1 give 53 / 57 / 59 /
59 of 67 answers right; on the reading sets every one keeps 0 wrong "not found" and 29 of
29 off-topic, and 17 / 16 / 16 / 14 of 38 unanswerable "not found"; the walkthrough's
"not found" turns stay 8 of 8 up to 0.5, 7 at 1. Chosen as the least weight with the
most right (BENCHMARKS.md, session 23)."""
DEFAULT_HISTORY_WEIGHT = 0.4
"""Chosen by measurement with ``convrag eval mtrag`` on both MTRAG domains (BENCHMARKS.md)."""
DEFAULT_FEEDBACK_WEIGHT = 0.4
"""Chosen by measurement with ``convrag eval mtrag``: best on ClapNQ (0.2 on Cloud, 0.4 a
close second), and a gain on the other domain in both directions (BENCHMARKS.md)."""


DEFAULT_RAW_QUERY_WEIGHT = 1.0
DEFAULT_REWRITE_QUERY_WEIGHT = 0.5
DEFAULT_HISTORY_QUERY_WEIGHT = 0.5
DEFAULT_ANCHOR_WEIGHT = 0.5
"""The multi-query fusion's weights (:mod:`convrag.fusion`; only their ratios matter): the
best mean R@5 (all turns and follow-ups) of both MTRAG dev domains, full pools, with
``benchmarks/fit_fusion.py``, each domain's own fit tested on the other (BENCHMARKS.md,
issue 31). The message as typed weighs most: a bad rewrite cannot push its hits out."""
DEFAULT_LLM_REWRITE_QUERY_WEIGHT = 1.0
"""An LLM's rewrite weighs as much as the message: the best mean R@5 of both MTRAG dev
domains with MTRAG's own LLM rewrites (``convrag eval mtrag -s convrag_llm_reference``,
BENCHMARKS.md, session 22)."""


class KnobTypeError(ValueError):
    """A knob's value is not of the knob's type, nor a string that reads as one."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


_TRUE, _FALSE = ("true", "1"), ("false", "0")


def read_knob(hint: Any, value: object) -> object:
    """``value`` as a knob of type ``hint`` (``bool``, ``int``, ``float``, ``str``, an
    optional ``str`` or a ``Literal`` of strings), or :class:`KnobTypeError` naming the
    type expected.

    One rule for the CLI's ``--set`` and for contexts built from a mapping (the SDK's
    JSON): a value of the type passes (an ``int`` for a ``float`` too), and so does a
    string that plainly reads as one ("false", "0", "3", "0.2"); nothing else is guessed
    (a ``bool`` is no number, a ``float`` no ``int``).
    """
    raw = value.strip().lower() if isinstance(value, str) else None
    if hint is bool:
        if isinstance(value, bool):
            return value
        if raw in _TRUE or raw in _FALSE:
            return raw in _TRUE
        raise KnobTypeError("true or false")
    if hint is int or hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            if hint is float:
                return float(value)
            if isinstance(value, int):
                return value
        elif raw is not None:
            try:
                return hint(raw)
            except ValueError:
                pass
        raise KnobTypeError(hint.__name__)
    if get_origin(hint) is Literal:
        if value in get_args(hint):
            return value
        raise KnobTypeError("one of " + ", ".join(repr(v) for v in get_args(hint)))
    optional = hint == (str | None)
    if isinstance(value, str) or (optional and value is None):
        return value
    raise KnobTypeError("str or null" if optional else "str")


def _described(value: object) -> str:
    """``value`` as an error message shows what was sent."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    if isinstance(value, bool | int | float):
        return repr(value)
    return type(value).__name__


#: ``Services`` passes through pydantic untouched (it is not data) and stays out of the
#: context's JSON schema. It serialises as nothing: without a serializer of its own, pydantic
#: builds one from the ``Services`` type, which fails on its protocol-typed fields (under
#: ``langgraph dev``, every ``/schemas`` call logged "Failed to get config schema").
InjectedServices = Annotated[
    Services | None,
    PlainValidator(lambda v: v),
    PlainSerializer(lambda _: None),
    SkipJsonSchema(),
]


@dataclass(kw_only=True)
class Context:
    """Knobs of one run, validated when the context is built."""

    workspace_id: str = field(
        default=DEFAULT_WORKSPACE, metadata={"description": "Workspace to search."}
    )
    llm_model: str | None = field(
        default=None,
        metadata={
            "description": "'provider:model' for answers; None uses LLM_MODEL / "
            "OPENAI_API_KEY from the environment, 'none' forces the no-LLM path."
        },
    )
    rewrite_model: str | None = field(
        default=None, metadata={"description": "Model for rewriting; defaults to llm_model."}
    )
    rag_enabled: bool = True
    history_turns: int = field(default=5, metadata={"description": "Turns of history loaded."})
    create_conversation: bool = field(
        default=True,
        metadata={
            "description": "Start an unknown conversation id as a new conversation. When "
            "false, an unknown id fails the turn (the HTTP service creates conversations "
            "through its own route)."
        },
    )
    top_k: int = field(default=5, metadata={"description": "Sources given to synthesis."})
    answer_sentences: int = field(
        default=DEFAULT_ANSWER_SENTENCES,
        metadata={
            "description": "Most sentences an extractive answer (no LLM, or the LLM's "
            "fallback) quotes from the sources."
        },
    )
    score_threshold: float = field(
        default=0.0,
        metadata={
            "description": "Minimum relevance of a vector hit: its cosine similarity to the "
            "standalone query (comparable across queries). 0 keeps every hit."
        },
    )
    relevance_floor: float = field(
        default=DEFAULT_RELEVANCE_FLOOR,
        metadata={
            "description": "Answer 'not found' when the evidence (the best chunk's "
            "cosine similarity to the query, mixed with its closest sentence's by "
            "sentence_weight, less the rare-term penalty) is under this, and no item or "
            "web page was found. 0 never abstains."
        },
    )
    rare_term_penalty: float = field(
        default=DEFAULT_RARE_TERM_PENALTY,
        metadata={
            "description": "Evidence subtracted per unit of IDF of the rarest query term "
            "that no source contains (a question about something the workspace lacks), on "
            "a conversation's first turn. 0 uses the cosine alone."
        },
    )
    later_rare_term_penalty: float = field(
        default=DEFAULT_LATER_RARE_TERM_PENALTY,
        metadata={
            "description": "rare_term_penalty on a conversation's later turns that are not "
            "follow-ups, where a word the documents lack is more often shorthand, a typo or "
            "a remark."
        },
    )
    sentence_weight: float = field(
        default=DEFAULT_SENTENCE_WEIGHT,
        metadata={
            "description": "Where the sources' sentences are weighed, the closest "
            "sentence's share of the evidence; the best chunk's cosine is the rest. "
            "1: the sentence alone."
        },
    )
    sentence_band: float = field(
        default=DEFAULT_SENTENCE_BAND,
        metadata={
            "description": "Weigh the sources' sentences only when the best chunk's "
            "evidence is under relevance_floor or within this above it; higher, the chunk's "
            "evidence decides. 1 always weighs them."
        },
    )
    confidence_margin: float = field(
        default=DEFAULT_CONFIDENCE_MARGIN,
        metadata={
            "description": "Mark an answer (or its 'not found') low confidence when its "
            "evidence lies within this of relevance_floor, either side. 0 marks none."
        },
    )
    context_budget_chars: int = field(
        default=4000, metadata={"description": "Maximum characters of source text."}
    )
    history_weight: float = field(
        default=DEFAULT_HISTORY_WEIGHT,
        metadata={
            "description": "Weight of the previous question's vector beside the standalone "
            "query's in dense search, on turns with history (0 searches the query alone)."
        },
    )
    feedback_weight: float = field(
        default=DEFAULT_FEEDBACK_WEIGHT,
        metadata={
            "description": "Pseudo-relevance feedback in dense search: the query vector "
            "moves by this much towards the mean of its first three passages before the "
            "final ranking (0 ranks by the query alone; Milvus's dense engine searches twice)."
        },
    )
    raw_query_weight: float = field(
        default=DEFAULT_RAW_QUERY_WEIGHT,
        metadata={
            "description": "On turns with history: weight of the raw message's own hybrid "
            "list in the fusion of the turn's queries (the floor under the rewrite)."
        },
    )
    rewrite_query_weight: float = field(
        default=DEFAULT_REWRITE_QUERY_WEIGHT,
        metadata={
            "description": "On turns with history: weight of the rewrite's list (its dense "
            "query mixes in the previous question by history_weight), when the rewrite "
            "differs from the message and passed the gate."
        },
    )
    llm_rewrite_query_weight: float = field(
        default=DEFAULT_LLM_REWRITE_QUERY_WEIGHT,
        metadata={
            "description": "On a follow-up that the LLM rewrote: weight of the rewrite's list "
            "beside the raw message's (such a turn searches no history list)."
        },
    )
    history_query_weight: float = field(
        default=DEFAULT_HISTORY_QUERY_WEIGHT,
        metadata={
            "description": "On turns with history: weight of the list that searches the "
            "message with the previous question (on a follow-up, the two as one query), its "
            "dense query mixing in the previous question by history_weight. A follow-up with "
            "no words of its own searches it beside its rewrite, not the raw list."
        },
    )
    anchor_weight: float = field(
        default=DEFAULT_ANCHOR_WEIGHT,
        metadata={
            "description": "On a follow-up: weight of the anchor list (the candidates from the "
            "previous answer's documents, in fused order) beside the queries' lists; 0 "
            "ignores which documents the previous answer cited."
        },
    )
    paragraph_weight: float = field(
        default=DEFAULT_PARAGRAPH_WEIGHT,
        metadata={
            "description": "Where the sources' sentences are weighed, how far the chunk's "
            "share of the evidence moves up towards the cosine of the paragraph holding the "
            "closest sentence, in a chunk of several paragraphs (1: all the way; 0: the "
            "chunk's cosine alone)."
        },
    )
    keyword_second_look: bool = field(
        default=True,
        metadata={
            "description": "Before answering 'not found', weigh alone the first query's best "
            "keyword hit, when the fusion ranked it below the sources: a passage that alone "
            "names an option or identifier asked about, which the dense model ranks far "
            "down. It takes the last source place when it clears relevance_floor."
        },
    )
    standalone_raw_query: bool = field(
        default=False,
        metadata={
            "description": "A turn the rules call standalone (with history) also searches "
            "its raw message, fused with its history-mixed query (false: that query alone)."
        },
    )
    rewrite_rules_off: str = field(
        default="",
        metadata={
            "description": "Comma-separated rewrite rules to switch off (convrag.rewriting."
            "RULES), to measure what each one earns; empty runs them all."
        },
    )
    repetition_threshold: float = field(
        default=0.7, metadata={"description": "Entity overlap above which to regenerate."}
    )
    max_regenerations: int = 2
    web_search: Literal["auto", "on", "off"] = "auto"
    web_confidence_threshold: float = field(
        default=0.25,
        metadata={
            "description": "Auto web search under this retrieval confidence (best dense cosine)."
        },
    )
    rewrite_temperature: float = 0.2
    answer_temperature: float = 0.3
    rewrite_timeout_s: float = DEFAULT_REWRITE_TIMEOUT_S
    answer_timeout_s: float = DEFAULT_LLM_TIMEOUT_S
    retrieval_timeout_s: float = 3.5
    web_timeout_s: float = DEFAULT_WEB_SEARCH_TIMEOUT_S
    services: InjectedServices = field(default=None, repr=False, compare=False)
    """The run's stores, embedder, searcher and web tool; see :attr:`deps`."""

    @property
    def deps(self) -> Services:
        """The run's services, or a clear error when the caller gave none."""
        if self.services is None:
            raise RuntimeError(
                "this run has no services: open them with convrag.services.open_services() "
                "and pass Context(services=...), or use convrag.assistant.open_assistant()"
            )
        return self.services

    def rewrite_model_name(self) -> str | None:
        """The model the rewrite gate calls (``rewrite_model``, else ``llm_model``, else
        the environment's), or None when the rules rewrite instead."""
        return resolve_model(self.rewrite_model or self.llm_model, self.deps.settings)

    def __post_init__(self) -> None:
        self._read_types()
        problems = [
            problem
            for name, check in _CHECKS
            if (problem := check(name, getattr(self, name))) is not None
        ]
        if problems:
            raise ValueError("invalid context: " + "; ".join(problems))

    def _read_types(self) -> None:
        """Each knob read as its type (:func:`read_knob`), or one ``ValueError`` naming
        every knob of the wrong type: a context may come from untrusted JSON (the SDK's,
        which LangGraph hands over as keyword arguments), where ``"false"`` must not
        count as true nor ``"3"`` fail deep inside a node."""
        problems = []
        for name, hint in _knob_types().items():
            value = getattr(self, name)
            try:
                read = read_knob(hint, value)
            except KnobTypeError as exc:
                problems.append(f"{name}: expected {exc.expected}, got {_described(value)}")
                continue
            if read is not value:
                setattr(self, name, read)
        if problems:
            raise ValueError("invalid context: " + "; ".join(problems))

    @classmethod
    def parse_overrides(cls, pairs: Sequence[str]) -> dict[str, Any]:
        """``NAME=VALUE`` pairs (the CLI's ``--set``) as typed knob values, checked now.

        Each name must be a knob of this class (not ``workspace_id``, which the caller
        owns, nor ``services``); each value is read as the knob's type. The combination is
        validated as a whole by building a context from it, so a bad value fails before
        any work starts, with the same message a run would give.
        """
        knobs = {name: hint for name, hint in _knob_types().items() if name != "workspace_id"}
        out: dict[str, Any] = {}
        for pair in pairs:
            name, sep, raw = pair.partition("=")
            name, raw = name.strip(), raw.strip()
            if not sep:
                raise ValueError(f"--set {pair!r}: expected NAME=VALUE, e.g. feedback_weight=0.2")
            if name not in knobs:
                raise ValueError(
                    f"--set {name}: not a context knob; one of {', '.join(sorted(knobs))}"
                )
            try:
                out[name] = read_knob(knobs[name], raw)
            except KnobTypeError as exc:
                raise ValueError(f"--set {name}={raw}: expected {exc.expected}") from None
        cls(**out)
        return out

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None) -> Context:
        """Build from a mapping (e.g. the SDK's ``context``), checked now: an unknown key
        (or ``services``, which no mapping may set) is refused with the knobs' names, and
        each value is read as its knob's type (:func:`read_knob`)."""
        known = _knob_types()
        unknown = sorted(str(k) for k in (data or {}) if k not in known)
        if unknown:
            raise ValueError(
                f"invalid context: unknown key {', '.join(map(repr, unknown))}; "
                f"the knobs are {', '.join(sorted(known))}"
            )
        return cls(**dict(data or {}))


_Check = Callable[[str, Any], str | None]
"""A knob's check: given its name and value, the problem to report, or None."""


def _at_least(low: float, *, strict: bool = False) -> _Check:
    """The check of a knob that must be ``low`` or more (more than ``low`` when
    ``strict``)."""

    def check(name: str, value: Any) -> str | None:
        if value <= low if strict else value < low:
            return f"{name} must be {'>' if strict else '>='} {low:g}"
        return None

    return check


def _within(low: float, high: float) -> _Check:
    """The check of a knob that must lie from ``low`` to ``high`` (both included; not a
    number is outside)."""

    def check(name: str, value: Any) -> str | None:
        return None if low <= value <= high else f"{name} must be within [{low:g}, {high:g}]"

    return check


def _rule_switches(name: str, value: str) -> str | None:
    """The check of ``rewrite_rules_off``: each comma-separated name a rewrite rule."""
    try:
        check_switches(r.strip() for r in value.split(",") if r.strip())
    except ValueError as exc:
        return f"{name}: {exc}"
    return None


#: Each knob's check, in the order a context's problems are reported.
_CHECKS: tuple[tuple[str, _Check], ...] = (
    ("history_turns", _at_least(1)),
    ("top_k", _at_least(1)),
    ("answer_sentences", _at_least(1)),
    ("context_budget_chars", _at_least(1)),
    ("max_regenerations", _at_least(0)),
    ("history_weight", _within(0, 1)),
    ("feedback_weight", _within(0, 2)),
    ("raw_query_weight", _within(0, 4)),
    ("rewrite_query_weight", _within(0, 4)),
    ("llm_rewrite_query_weight", _within(0, 4)),
    ("history_query_weight", _within(0, 4)),
    ("anchor_weight", _within(0, 4)),
    ("rewrite_rules_off", _rule_switches),
    ("sentence_band", _within(0, 1)),
    ("sentence_weight", _within(0, 1)),
    ("paragraph_weight", _within(0, 1)),
    ("confidence_margin", _within(0, 1)),
    ("rare_term_penalty", _within(0, 0.1)),
    ("later_rare_term_penalty", _within(0, 0.1)),
    ("score_threshold", _within(0, 1)),
    ("relevance_floor", _within(0, 1)),
    ("repetition_threshold", _within(0, 1)),
    ("rewrite_timeout_s", _at_least(0, strict=True)),
    ("answer_timeout_s", _at_least(0, strict=True)),
    ("retrieval_timeout_s", _at_least(0, strict=True)),
    ("web_timeout_s", _at_least(0, strict=True)),
)


@cache
def _knob_types() -> dict[str, Any]:
    """Each knob of :class:`Context` (every field but ``services``) and its type."""
    hints = get_type_hints(Context)
    return {f.name: hints[f.name] for f in fields(Context) if f.name != "services"}
