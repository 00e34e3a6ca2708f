"""A turn's sources and the "not found" decision: the hits merged, deduplicated and cut to
the budget, the probability that they say what was asked (the policy's "not found"
model), and whether the web should be searched.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from convrag.embeddings import cosine_to_query
from convrag.records import Source, section_path
from convrag.retrieval.evidence import (
    Signals,
    answer_probability,
    assurance,
    names_every_term,
    paragraph_evidence,
    sentence_evidence,
)
from convrag.retrieval.in_place import passages_in_place
from convrag.retrieval.planning import TurnQuery, evidence_queries
from convrag.retrieval.policy import RetrievalPolicy
from convrag.retrieval.ranking import query_coverage
from convrag.retrieval.uses import WingServices

WebSearchMode = Literal["auto", "on", "off"]

_FRESH = re.compile(
    r"\b(latest|today|tonight|this (week|month|year)|current(ly)?|right now|news|recent(ly)?|"
    r"upcoming|live|stock price|weather|20[2-9]\d)\b",
    re.IGNORECASE,
)


def needs_fresh_information(text: str) -> bool:
    """The freshness cue: the question asks about now, not the documents."""
    return bool(_FRESH.search(text))


class SearchUnavailable(RuntimeError):
    """The workspace could not be searched (a store failed or ran out of time): the turn
    fails rather than say "not found", which would blame the documents."""


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """How the turn's search went: ``failed``, why it found nothing because it failed
    (None when it ran); ``degraded``, whether it went on with some of its lists only."""

    failed: str | None = None
    degraded: bool = False


@dataclass(frozen=True, slots=True)
class SourceBudget:
    """The run's choices about sources: how many, how much text, and the least cosine a
    vector hit must have (0 keeps every hit)."""

    top_k: int
    max_chars: int
    score_threshold: float = 0.0


def relevant(hit: Source, threshold: float) -> bool:
    """Whether a vector hit's cosine similarity to the query reaches ``threshold``.

    A hit found by keywords alone has no similarity; it passes only when nothing is
    filtered (``threshold`` 0).
    """
    if threshold <= 0.0:
        return True
    similarity = hit.get("dense_score")
    return similarity is not None and similarity >= threshold


def budget(sources: list[Source], *, top_k: int, max_chars: int) -> list[Source]:
    """Keep sources in order until ``top_k`` or ``max_chars`` of text; trim the last one."""
    kept: list[Source] = []
    used = 0
    for src in sources:
        if len(kept) >= top_k or used >= max_chars:
            break
        room = max_chars - used
        if len(src["text"]) > room:
            if kept and room < 200:
                break
            src = {**src, "text": src["text"][:room]}
        kept.append(src)
        used += len(src["text"])
    return kept


@dataclass(slots=True)
class Merged:
    """A turn's sources and what was decided about them."""

    sources: list[Source]
    confidence: float
    """The best dense cosine of the vector hits (1 when an item was named exactly)."""
    abstain: bool
    signals: Signals | None = None
    """The evidence weighed, when it was (None: an exact item, or a threshold of 0)."""
    probability: float | None = None
    """The "not found" model's probability that the sources hold the answer."""
    low_confidence: bool = False
    timings: dict[str, float] = field(default_factory=dict)


class Evidence:
    """Weighs whether a turn's sources say what was asked."""

    def __init__(self, turn: TurnQuery, services: WingServices, policy: RetrievalPolicy) -> None:
        self.turn, self.services, self.policy = turn, services, policy
        self.timings: dict[str, float] = {}

    async def _sentences(
        self, queries: list[str], kept: list[Source], confidence: float
    ) -> tuple[float | None, float]:
        """The closest sentences' evidence (the best any query finds: for each, its
        closest sentences sharing a word with it, else, a paraphrase, the chunks'
        ``confidence``; None when no query has a sentence of its own), and the best cosine
        of a paragraph holding a query's closest sentence in a chunk of several
        paragraphs, at least ``confidence`` (measured only when the model weighs it or
        ``sentence_band`` is 1: a recording)."""
        policy = self.policy
        similarity = cosine_to_query(self.services.sentences)
        scored = [
            await asyncio.to_thread(sentence_evidence, query, kept, similarity, policy)
            for query in queries
        ]
        if all(c is None for c in scored):
            return None, confidence
        closest = max(confidence if c is None else c for c in scored)
        if "paragraph" not in policy.answer_model and policy.sentence_band < 1.0:
            return closest, confidence
        found = [
            await asyncio.to_thread(paragraph_evidence, q, kept, similarity, policy)
            for q in queries
        ]
        return closest, max([confidence, *(c for c in found if c is not None)])

    async def weigh(self, kept: list[Source], confidence: float) -> tuple[float, Signals]:
        """The probability that ``kept`` holds the answer (the policy's ``answer_model``
        over :func:`answer_features`), and the signals it was computed from."""
        turn, policy = self.turn, self.policy
        queries = evidence_queries(turn)
        texts = [f"{s['title'] or ''}\n{s['text']}" for s in kept]
        rarest = self.services.searcher.rarest_missing_term(
            turn.workspace_id, queries[0], texts, typed=turn.message
        )
        null = await self.services.nulls.of(turn.workspace_id)
        signals = Signals(
            confidence=confidence,
            sentence=confidence,
            paragraph=confidence,
            rarest=rarest,
            every_term=float(any(names_every_term(query, kept, policy) for query in queries)),
            follow_up=float(turn.follow_up),
            bm25=float(any(s.get("bm25_score") is not None for s in kept)),
            later=float(bool(turn.history) and not turn.follow_up),
            margin=_margin(kept),
            agreement=float(
                bool(kept)
                and kept[0].get("dense_score") is not None
                and kept[0].get("bm25_score") is not None
            ),
            coverage=max(query_coverage(q, "\n".join(texts)) for q in queries) if texts else 0.0,
            null_mean=null.mean,
            null_spread=null.spread,
        )
        unweighed = answer_probability(signals, policy.answer_model)
        if abs(unweighed - policy.answer_threshold) > policy.sentence_band:
            return unweighed, signals  # the sentences would not change the decision
        waited = time.perf_counter()
        closest, paragraph = await self._sentences(queries, kept, confidence)
        self.timings["embed_sentences"] = _ms_since(waited)
        signals = replace(
            signals, sentence=confidence if closest is None else closest, paragraph=paragraph
        )
        return answer_probability(signals, policy.answer_model), signals


def _margin(kept: Sequence[Source]) -> float:
    """How far the best dense cosine of ``kept`` stands above the mean of the next four
    (0 with fewer than two)."""
    cosines = sorted((s.get("dense_score") or 0.0 for s in kept), reverse=True)
    if len(cosines) < 2:
        return 0.0
    rest = cosines[1:5]
    return round(cosines[0] - sum(rest) / len(rest), 6)


def _ms_since(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)


async def labelled(services: WingServices, workspace_id: str, kept: list[Source]) -> list[Source]:
    """``kept`` with what the hits lack (the in-process engines label theirs): a chunk's
    title, its PDF page and its section, in one lookup."""
    unlabelled = [
        s["id"] for s in kept if s["source_type"] in ("chunk", "document") and s["title"] is None
    ]
    if not unlabelled:
        return kept
    stored = {c.id: c for c in await services.db.documents.get_chunks(workspace_id, unlabelled)}
    return [
        {
            **s,
            "title": s["title"] or stored[s["id"]].title,
            "page": stored[s["id"]].page,
            "section": section_path(stored[s["id"]].heading, stored[s["id"]].title),
        }
        if s["id"] in stored
        else s
        for s in kept
    ]


Weighed = tuple[list[Source], float, Signals]


async def _second_look(
    evidence: Evidence, keyword_hit: Source | None, budgeted: SourceBudget, first: Weighed
) -> Weighed:
    """Before "not found": the first query's keyword top hit, which the fusion ranked
    below the sources, weighed alone, by its own cosine and sentences; when the model
    would answer from it alone it takes the last source place.

    The keyword list weighs little in the fusion, so the passage that alone names an
    option or identifier asked about ("What does --sandbox mode reject?") can rank below
    every dense hit. Given that place always, it costs recall; weighed with the other
    sources, its rare word would lend their cosine to an off-topic question. Weighed
    alone, only when the sources found nothing, it changes no other turn.
    """
    kept = first[0]
    policy, services, turn = evidence.policy, evidence.services, evidence.turn
    if (
        keyword_hit is None
        or not policy.keyword_second_look
        or any(s["id"] == keyword_hit["id"] for s in kept)
    ):
        return first
    (hit,) = await labelled(services, turn.workspace_id, [keyword_hit])
    query = evidence_queries(turn)[0]
    text = f"{hit['title'] or ''}\n{hit['text']}"
    similarity = cosine_to_query(services.sentences)
    (own,) = await asyncio.to_thread(similarity, query, [text])
    weight, signals = await evidence.weigh([hit], own)
    if weight < policy.answer_threshold:
        return first
    other = budget(
        [*kept[: budgeted.top_k - 1], hit],
        top_k=budgeted.top_k,
        max_chars=budgeted.max_chars,
    )
    return other, weight, signals


async def _in_place_look(evidence: Evidence, budgeted: SourceBudget, first: Weighed) -> Weighed:
    """Before "not found" on a later turn: the passages around the previous answer's
    (:mod:`convrag.retrieval.in_place`), weighed alone by the same model, the turn read
    as a follow-up (it is asked of the previous answer's passages: a message left as
    typed is weighed with the previous question too, :func:`evidence_queries`); they
    become the sources only when the model would answer from them."""
    turn, policy = evidence.turn, evidence.policy
    found = await passages_in_place(turn, evidence.services, turn.query, policy.in_place_reach)
    if not found:
        return first
    kept = budget(found, top_k=budgeted.top_k, max_chars=budgeted.max_chars)
    probe = Evidence(replace(turn, classification="follow_up"), evidence.services, policy)
    weight, signals = await probe.weigh(kept, max(s.get("dense_score") or 0.0 for s in kept))
    evidence.timings.update(probe.timings)
    return (kept, weight, signals) if weight >= policy.answer_threshold else first


async def merge_sources(
    turn: TurnQuery,
    hits: tuple[Sequence[Source], Sequence[Source], Source | None],
    services: WingServices,
    policy: RetrievalPolicy,
    budgeted: SourceBudget,
    outcome: SearchOutcome = SearchOutcome(),
) -> Merged:
    """The turn's sources from its ``hits`` (the exact items a message names, the
    vector hits, and the keyword hit for a second look), and whether to say "not found".

    A search that failed, or went on with some lists and found nothing, raises
    :class:`SearchUnavailable`; one that went on with some lists and found sources
    answers from them, marked low confidence, never "not found".
    """
    started = time.perf_counter()
    document_hits, vector_hits, keyword_hit = hits
    if (outcome.failed or outcome.degraded) and not document_hits and not vector_hits:
        raise SearchUnavailable(outcome.failed or "every list of the search failed")
    seen: set[str] = set()
    merged: list[Source] = []
    vector = [h for h in vector_hits if relevant(h, budgeted.score_threshold)]
    for src in [*document_hits, *vector]:
        if src["id"] not in seen:
            seen.add(src["id"])
            merged.append(src)
    kept = await labelled(
        services,
        turn.workspace_id,
        budget(merged, top_k=budgeted.top_k, max_chars=budgeted.max_chars),
    )
    confidence = max((s.get("dense_score") or 0.0 for s in vector), default=0.0)
    evidence = Evidence(turn, services, policy)
    signals: Signals | None = None
    if document_hits:
        confidence = max(confidence, 1.0)
        weight = confidence
    elif policy.answer_threshold <= 0.0:
        weight = confidence  # never abstains: no evidence to weigh
    else:
        weight, signals = await evidence.weigh(kept, confidence)
        if weight < policy.answer_threshold:
            kept, weight, signals = await _second_look(
                evidence, keyword_hit, budgeted, (kept, weight, signals)
            )
        if weight < policy.answer_threshold:
            kept, weight, signals = await _in_place_look(
                evidence, budgeted, (kept, weight, signals)
            )
    close = signals is not None and (
        assurance(weight, policy.answer_threshold, policy.confidence_margin) == "low"
    )
    partial = bool(outcome.failed or outcome.degraded)
    return Merged(
        sources=kept,
        confidence=confidence,
        abstain=weight < policy.answer_threshold and not partial,
        signals=signals,
        probability=weight if signals is not None else None,
        low_confidence=close or partial,
        timings={**evidence.timings, "merge_context": _ms_since(started)},
    )


def web_search_reason(
    turn: TurnQuery,
    merged: Merged,
    policy: RetrievalPolicy,
    *,
    mode: WebSearchMode,
    web_available: bool,
) -> str | None:
    """Why the web should be searched for this turn, or None: requested, a freshness
    cue, low retrieval confidence, or (when the web can be searched) nothing found."""
    if not web_available or mode == "off":
        return None
    if mode == "on":
        return "requested"
    if turn.classification == "no_retrieval":
        return None
    if needs_fresh_information(turn.query):
        return "fresh_information"
    if merged.confidence < policy.web_confidence_threshold:
        return "low_confidence"
    return "not_found" if merged.abstain else None
