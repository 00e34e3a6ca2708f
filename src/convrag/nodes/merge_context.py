"""merge_context: fuse the two retrieval sources, deduplicate, cut to the context budget,
and decide whether web search should run (requested, a freshness cue, or low confidence).

Not a node of its own: ``synthesize`` merges once per turn, first thing, when retrieval
ran. A node here would cost a superstep between the search and the first token.
"""

from __future__ import annotations

import asyncio
import re
import time

from langgraph.runtime import Runtime

from convrag.answering.abstention import Signals, assurance
from convrag.answering.evidence import names_every_term, paragraph_evidence, sentence_evidence
from convrag.context import Context
from convrag.embeddings import cosine_to_query
from convrag.events import SourcesEvent, emit
from convrag.nodes.policy import ms_since
from convrag.records import Source, previous_question, section_path, sources_out
from convrag.state import MergeUpdate, State

_FRESH = re.compile(
    r"\b(latest|today|tonight|this (week|month|year)|current(ly)?|right now|news|recent(ly)?|"
    r"upcoming|live|stock price|weather|20[2-9]\d)\b",
    re.IGNORECASE,
)


def needs_fresh_information(text: str) -> bool:
    """The classifier's freshness cue: the question asks about now, not the documents."""
    return bool(_FRESH.search(text))


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


def web_search_reason(state: State, ctx: Context, *, web_available: bool) -> str | None:
    if not web_available or ctx.web_search == "off":
        return None
    if ctx.web_search == "on":
        return "requested"
    if state.get("classification") == "no_retrieval":
        return None
    if needs_fresh_information(state.get("rewritten_query") or state["question"]):
        return "fresh_information"
    if state.get("retrieval_confidence", 0.0) < ctx.web_confidence_threshold:
        return "low_confidence"
    return None


def retrieves(state: State, ctx: Context) -> bool:
    """Whether the turn searches the workspace (both retrieval nodes run, then the merge)."""
    return ctx.rag_enabled and state.get("classification") != "no_retrieval"


async def merge_context(state: State, runtime: Runtime[Context]) -> MergeUpdate:
    """Fuse, deduplicate and budget the sources, decide whether the web is needed, and
    send the ``sources`` event."""
    update = await merge_sources(state, runtime.context)
    emit(runtime, SourcesEvent(event="sources", sources=sources_out(update["sources"])))
    return update


def evidence_queries(state: State) -> list[str]:
    """The queries a turn's evidence is weighed for: its standalone query, and for a
    follow-up the rules left as typed ("Which is the most popular?") the message with
    the previous question too, as it was searched (its history query). Either finding
    evidence is enough: on its own words alone, a follow-up may name no topic, and the
    previous question may be about another part of the documents."""
    message = state["question"]
    query = state.get("rewritten_query") or message
    previous = previous_question(state.get("history") or [])
    if state.get("classification") == "follow_up" and previous and query.strip() == message.strip():
        return [query, f"{message.strip()} {previous}"]
    return [query]


async def _sentence_evidence(
    queries: list[str], kept: list[Source], confidence: float, ctx: Context
) -> float | None:
    """The best evidence any of ``queries`` finds: for each, the best cosine of a source
    sentence that shares a word with it, else (a paraphrase) the chunks' ``confidence``;
    None when no query has a sentence of its own (the chunks' cosine is all there is)."""
    scored = [
        await asyncio.to_thread(sentence_evidence, query, kept, cosine_to_query(ctx.deps.sentences))
        for query in queries
    ]
    if all(c is None for c in scored):
        return None
    return max(confidence if c is None else c for c in scored)


async def _sentences_and_paragraph(
    queries: list[str], kept: list[Source], confidence: float, ctx: Context
) -> tuple[float | None, float]:
    """The closest sentences' evidence (:func:`_sentence_evidence`), and the best cosine
    of a paragraph holding a query's closest sentence in a chunk of several paragraphs
    (:func:`paragraph_evidence`), at least the chunks' ``confidence``."""
    closest = await _sentence_evidence(queries, kept, confidence, ctx)
    if closest is None or ctx.paragraph_weight <= 0:
        return closest, confidence
    similarity = cosine_to_query(ctx.deps.sentences)
    found = [await asyncio.to_thread(paragraph_evidence, q, kept, similarity) for q in queries]
    return closest, max([confidence, *(c for c in found if c is not None)])


async def _weigh_evidence(
    state: State, ctx: Context, kept: list[Source], confidence: float, timings: dict[str, float]
) -> tuple[float, Signals]:
    """The evidence that the relevance floor is held against, and the signals behind it.

    The rarest word typed that no source holds lowers the chunks' cosine, less on a later
    turn of a conversation that is not a follow-up (``later_rare_term_penalty``). Sentences cost
    up to 16 embeddings: weighed only where they can change the decision, which is
    anywhere under the floor or near it; the evidence is then the closest sentence's
    cosine mixed with the best chunk's (``sentence_weight``): a chunk mixing several
    sections scores low while one sentence answers, and a passage close as a whole may
    have no one sentence that says it all; where the closest sentence's chunk holds
    several paragraphs, the chunk's part moves towards its paragraph's cosine
    (``paragraph_weight``). With no sentence sharing a word with the query (a
    paraphrase), the chunk's cosine is all the evidence there is (and the sentence and
    paragraph signals are that cosine).
    """
    queries = evidence_queries(state)
    texts = [f"{s['title'] or ''}\n{s['text']}" for s in kept]
    rarest = ctx.deps.searcher.rarest_missing_term(
        state["workspace_id"], queries[0], texts, typed=state["question"]
    )
    later = bool(state.get("history")) and state.get("classification") != "follow_up"
    penalty = ctx.later_rare_term_penalty if later else ctx.rare_term_penalty
    evidence = confidence - penalty * rarest
    closest: float | None = None
    paragraph = confidence
    if evidence < ctx.relevance_floor + ctx.sentence_band:
        waited = time.perf_counter()
        closest, paragraph = await _sentences_and_paragraph(queries, kept, confidence, ctx)
        timings["embed_sentences"] = ms_since(waited)
        if closest is not None:
            chunk = confidence + ctx.paragraph_weight * (paragraph - confidence)
            weighed = ctx.sentence_weight * closest + (1 - ctx.sentence_weight) * chunk
            evidence = weighed - penalty * rarest
    every = any(names_every_term(query, kept) for query in queries)
    if evidence < ctx.relevance_floor and rarest == 0.0 and every:
        evidence = ctx.relevance_floor  # a sentence says every word asked
    signals = Signals(
        confidence=confidence,
        sentence=confidence if closest is None else closest,
        paragraph=paragraph,
        rarest=rarest,
        every_term=float(every),
        follow_up=float(state.get("classification") == "follow_up"),
        bm25=float(any(s.get("bm25_score") is not None for s in kept)),
        evidence=evidence,
    )
    return evidence, signals


async def _labelled(state: State, ctx: Context, kept: list[Source]) -> list[Source]:
    """``kept`` with what the hits lack (the in-process engines label theirs): a chunk's
    title, its PDF page and its section, in one lookup."""
    unlabelled = [
        s["id"] for s in kept if s["source_type"] in ("chunk", "document") and s["title"] is None
    ]
    if not unlabelled:
        return kept
    stored = {
        c.id: c for c in await ctx.deps.db.documents.get_chunks(state["workspace_id"], unlabelled)
    }
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
    state: State, ctx: Context, timings: dict[str, float], first: Weighed
) -> Weighed:
    """Before "not found": the first query's keyword top hit (``keyword_hit``), which the
    fusion ranked below the sources, weighed alone, by its own cosine and sentences; when
    it reaches the floor it takes the last source place.

    The keyword list weighs little in the fusion, so the passage that alone names an
    option or identifier asked about ("What does --sandbox mode reject?") can rank below
    every dense hit. Given that place always, it costs R@5 on both MTRAG domains; weighed
    with the other sources, its rare word would lend their cosine to an off-topic
    question. Weighed alone, only when the sources found nothing, it changes no other turn.
    """
    hit = state.get("keyword_hit")
    kept = first[0]
    if hit is None or not ctx.keyword_second_look or any(s["id"] == hit["id"] for s in kept):
        return first
    (hit,) = await _labelled(state, ctx, [hit])
    query = evidence_queries(state)[0]
    text = f"{hit['title'] or ''}\n{hit['text']}"
    similarity = cosine_to_query(ctx.deps.sentences)
    (own,) = await asyncio.to_thread(similarity, query, [text])
    evidence, signals = await _weigh_evidence(state, ctx, [hit], own, timings)
    if evidence < ctx.relevance_floor:
        return first
    other = budget(
        [*kept[: ctx.top_k - 1], hit], top_k=ctx.top_k, max_chars=ctx.context_budget_chars
    )
    return other, evidence, signals


async def merge_sources(state: State, ctx: Context) -> MergeUpdate:
    """:func:`merge_context` without the event (the retrieval evaluation reads it)."""
    started = time.perf_counter()
    services = ctx.deps
    seen: set[str] = set()
    merged: list[Source] = []
    vector = [h for h in state.get("vector_hits", []) if relevant(h, ctx.score_threshold)]
    for src in [*state.get("document_hits", []), *vector]:
        if src["id"] not in seen:
            seen.add(src["id"])
            merged.append(src)
    kept = await _labelled(
        state, ctx, budget(merged, top_k=ctx.top_k, max_chars=ctx.context_budget_chars)
    )
    confidence = max((s.get("dense_score") or 0.0 for s in vector), default=0.0)
    timings: dict[str, float] = {}
    signals: Signals | None = None
    if state.get("document_hits"):
        confidence = max(confidence, 1.0)
        evidence = confidence
    elif ctx.relevance_floor <= 0.0:
        evidence = confidence  # never abstains: no evidence to weigh
    else:
        evidence, signals = await _weigh_evidence(state, ctx, kept, confidence, timings)
        if evidence < ctx.relevance_floor:
            kept, evidence, signals = await _second_look(
                state, ctx, timings, (kept, evidence, signals)
            )
    abstain = evidence < ctx.relevance_floor
    reason = web_search_reason(
        {**state, "sources": kept, "retrieval_confidence": confidence},
        ctx,
        web_available=services.web is not None,
    )
    if abstain and reason is None and services.web is not None and ctx.web_search != "off":
        reason = "not_found"
    close = signals is not None and (
        assurance(evidence, ctx.relevance_floor, ctx.confidence_margin) == "low"
    )
    update = MergeUpdate(
        sources=kept,
        flags={"low_confidence": True} if close else {},
        retrieval_confidence=confidence,
        abstain=abstain,
        abstention_signals=signals.as_dict() if signals is not None else None,
        web_search_reason=reason,
        merged=True,
        timings={**timings, "merge_context": ms_since(started)},
    )
    if reason is not None:  # the web_search node runs next, then synthesize again
        update["pending_web_query"] = state.get("rewritten_query") or state["question"]
    return update
