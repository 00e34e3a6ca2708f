"""The retrieval policy: every fitted number of the retrieval wing, in one frozen record.

A fit command writes a policy file (JSON, one key per field); the service reads the file
the ``RETRIEVAL_POLICY`` setting names, else ``policy.json`` beside this module. Code
names the signals; the numbers that weigh them live here. What each number means is said
below; the measurements that chose them are in BENCHMARKS.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

from convrag.knobs import KnobTypeError, read_knob

DEFAULT_POLICY_FILE = Path(__file__).with_name("policy.json")


class PolicyError(ValueError):
    """A policy file or override that cannot be read: names the field and the problem."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RetrievalPolicy:
    """The numbers that decide what a turn retrieves, when it says "not found", and
    what its no-LLM answer quotes."""

    # -- fusion: every list a weighted ranked list, fused by sum(weight / (rrf_k + rank))
    rrf_k: int
    """The rank offset of reciprocal-rank fusion, for every fusion of the wing: a larger
    k flattens the difference between the first ranks."""
    keyword_weight: float
    """Weight of a query's keyword (BM25) list beside its dense list (which weighs 1)."""
    raw_query_weight: float
    """On turns with history: weight of the raw message's own list among the turn's
    queries (the floor under a rewrite: a bad rewrite can push its hits down, not out)."""
    raw_top_weight: float
    """On turns with history: weight of the raw message's first hit as a list of its own
    beside the turn's queries (its best passage stays first unless the other lists
    together outweigh it); 0: none."""
    rewrite_query_weight: float
    """Weight of the rules' rewrite's list, when it differs from the message."""
    llm_rewrite_query_weight: float
    """Weight of an LLM rewrite's list on a follow-up the LLM rewrote."""
    history_query_weight: float
    """Weight of a follow-up's history list: the message with the history terms the
    expansion model chooses, or with the previous question when that model is empty."""
    expansion_model: dict[str, float]
    """Which words of the conversation join a follow-up's history query: a logistic model
    over :data:`~convrag.retrieval.expansion.EXPANSION_FEATURES` (each named feature's
    weight, and ``bias``) that rates each candidate term; empty: the previous question
    joins the message instead. Written by ``benchmarks/fit_expansion.py fit``."""
    expansion_terms: int
    """How many of the terms the expansion model rates highest join the message."""
    anchor_weight: float
    """On a follow-up: weight of the anchor list (the candidates from the documents the
    previous answer cited, in fused order); 0 ignores them."""
    focus_model: dict[str, float]
    """Whether a follow-up stays on the previous answer's documents: a logistic model over
    :func:`~convrag.retrieval.focus.focus_features` (each named feature's weight, and
    ``bias``) whose probability scales ``anchor_weight``; empty: the anchor weight as is.
    Written by ``benchmarks/fit_focus.py fit``."""
    history_weight: float
    """Share of the previous question's vector mixed into a later turn's dense query."""
    feedback_weight: float
    """Pseudo-relevance feedback: how far the dense query vector moves towards the mean
    of its first three passages before the final ranking (0: the query alone)."""
    standalone_raw_query: bool
    """A turn the rules call standalone (with history) also searches its raw message."""

    # -- "not found": one logistic model over the evidence's named features
    answer_model: dict[str, float]
    """The "not found" model: each feature of ``convrag.retrieval.evidence.answer_features``
    with its weight, and ``bias``; fitted by ``benchmarks/fit_not_found.py``."""
    answer_threshold: float
    """Answer "not found" when the model's probability that the sources hold the answer is
    under this and no item or web page was found (0 never abstains)."""
    sentence_band: float
    """The sources' sentences are weighed (embedded, the ``sentence`` feature) only when
    the model with the best chunk's cosine in their place lies within this much of
    ``answer_threshold``: further away, no recorded decision changed with them (chosen by
    ``benchmarks/fit_not_found.py band``; 1 always weighs them, as a recording should)."""
    lone_sentence_margin: float
    """How much closer than the mean of the two closest sentences one sentence must be
    to count alone."""
    evidence_candidates: int
    """How many of the best sentences by words the evidence embeds and weighs."""
    keyword_second_look: bool
    """Before "not found", weigh alone the first query's best keyword hit that the fusion
    ranked below the sources; it takes the last source place when the model would answer
    from it alone."""
    in_place_reach: int
    """Before "not found" on a later turn, the passages the previous answer cited and this
    many either side of each in their documents are weighed alone, by the same model
    (:mod:`convrag.retrieval.in_place`); 0: no such look."""
    confidence_margin: float
    """A decision whose probability lies within this of ``answer_threshold``, either
    side, is marked low confidence."""
    web_confidence_threshold: float
    """Automatic web search runs under this retrieval confidence (best dense cosine)."""

    # -- the quoted answer (no LLM): which sentences are quoted
    semantic_candidates: int
    """How many of the best sentences by words the quoted answer embeds and reranks."""
    sentence_model: dict[str, float]
    """The quoted-answer ranker: each feature of
    :func:`~convrag.retrieval.quoting.sentence_features` with its weight in units of the
    sentence's cosine to the query (which weighs 1). Written by
    ``benchmarks/fit_sentences.py fit``."""
    same_work_floor: float
    """A sentence scoring under this share of the best one's score is not quoted: it
    answers a different question (another person's record than the one asked for)."""
    other_work_floor: float
    """A sentence of another document (a source with another title) than the best one's
    is quoted only when it scores at least this share of the best one's score."""
    question_to_answer: float
    """An FAQ's answer scores this share of the words its question shares with the
    query."""
    announced_sentences: int
    """How many sentences are quoted after one that announces them without a list ("There
    are several reasons for ..."); one after a colon."""

    def __post_init__(self) -> None:
        problems = [p for f in fields(self) if (p := _problem(f.name, getattr(self, f.name)))]
        if problems:
            raise PolicyError("invalid retrieval policy: " + "; ".join(problems))

    def with_values(self, values: Mapping[str, object]) -> RetrievalPolicy:
        """This policy with ``values`` (field name to value, each read as its field's
        type), checked: an unknown name or a bad value raises :class:`PolicyError`."""
        if not values:
            return self
        return replace(self, **read_values(values))

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


#: Each field's range, both ends included.
_RANGES: dict[str, tuple[float, float]] = {
    "rrf_k": (1, 10_000),
    "keyword_weight": (0, 4),
    "raw_query_weight": (0, 4),
    "raw_top_weight": (0, 4),
    "rewrite_query_weight": (0, 4),
    "llm_rewrite_query_weight": (0, 4),
    "history_query_weight": (0, 4),
    "anchor_weight": (0, 4),
    "history_weight": (0, 1),
    "feedback_weight": (0, 2),
    "answer_threshold": (0, 1),
    "sentence_band": (0, 1),
    "lone_sentence_margin": (0, 1),
    "evidence_candidates": (1, 256),
    "in_place_reach": (0, 50),
    "confidence_margin": (0, 1),
    "web_confidence_threshold": (0, 1),
    "semantic_candidates": (1, 256),
    "same_work_floor": (0, 1),
    "other_work_floor": (0, 1),
    "question_to_answer": (0, 1),
    "announced_sentences": (0, 20),
    "expansion_terms": (1, 20),
}


def _problem(name: str, value: object) -> str | None:
    low, high = _RANGES.get(name, (-math.inf, math.inf))
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not (low <= value <= high):
        return f"{name} must be within [{low:g}, {high:g}], got {value!r}"
    return None


@cache
def field_types() -> dict[str, type]:
    """Each field of :class:`RetrievalPolicy` and its type (bool, int, float, or a
    mapping of names to numbers: a fitted model's weights)."""
    kinds: dict[str, type] = {
        "bool": bool,
        "int": int,
        "float": float,
        "dict[str, float]": dict[str, float],
    }
    return {f.name: kinds[str(f.type)] for f in fields(RetrievalPolicy)}


def read_value(name: str, kind: type, value: object) -> object:
    """``value`` as a field of type ``kind``, read as a run's knobs are
    (:func:`convrag.knobs.read_knob`); else :class:`PolicyError` naming what was
    expected."""
    try:
        return read_knob(kind, value)
    except KnobTypeError:
        raise PolicyError(
            f"{name}: expected {getattr(kind, '__name__', kind)}, got {value!r}"
        ) from None


def read_values(values: Mapping[str, object]) -> dict[str, Any]:
    """``values`` read as the policy's fields; unknown names refused, naming the fields."""
    types = field_types()
    unknown = sorted(str(k) for k in values if k not in types)
    if unknown:
        raise PolicyError(
            f"unknown retrieval policy field {', '.join(map(repr, unknown))}; "
            f"the fields are {', '.join(types)}"
        )
    return {name: read_value(name, types[name], v) for name, v in values.items()}


def load_policy(path: Path | str | None = None) -> RetrievalPolicy:
    """The policy in ``path`` (default: the packaged ``policy.json``). Every field must
    be given; :class:`PolicyError` names what is missing, unknown or out of range."""
    where = Path(path) if path is not None else DEFAULT_POLICY_FILE
    try:
        data = json.loads(where.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PolicyError(f"cannot read the retrieval policy {where}: {exc}") from None
    if not isinstance(data, dict):
        raise PolicyError(f"{where}: a retrieval policy is a JSON object")
    missing = [name for name in field_types() if name not in data]
    if missing:
        raise PolicyError(f"{where}: missing field {', '.join(missing)}")
    try:
        return RetrievalPolicy(**read_values(data))
    except PolicyError as exc:
        raise PolicyError(f"{where}: {exc}") from None


def write_policy(policy: RetrievalPolicy, path: Path | str) -> None:
    """Write ``policy`` as a file :func:`load_policy` reads (what a fit command does)."""
    Path(path).write_text(json.dumps(policy.as_dict(), indent=2) + "\n", encoding="utf-8")


@cache
def default_policy() -> RetrievalPolicy:
    """The packaged policy, read once."""
    return load_policy()
