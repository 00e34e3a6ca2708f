"""How answers are written, shared by the ``synthesize`` and ``regenerate`` nodes.

Two ways to answer, one contract (a text with inline ``[n]`` markers over ``sources``):

* :func:`llm_answer`: a conversation-aware prompt, streamed token by token;
* :func:`extractive_answer`: no LLM; the most relevant sentences of the sources, each
  with its marker. It is also the fallback when the LLM fails mid-turn.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage

from convrag import prompts
from convrag.citations import strip_markers
from convrag.documents.blocks import LIST_ITEM
from convrag.records import HistoryTurn, Source
from convrag.text.tokens import expand_acronyms, phrasal_compounds, spelled_out
from convrag.text.units import looks_like_heading, names_a_section, quotable, sentences

_WORD = re.compile(r"[a-z0-9][a-z0-9$,.%'-]*[a-z0-9%]|[a-z0-9]")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "she",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "about",
        "tell",
        "more",
        "also",
        "please",
        "give",
        "list",
        "explain",
        "describe",
        "any",
        "some",
        "other",
        "get",
        "gets",
        "got",
        "getting",
        "want",
        "know",
    ]
)

NO_SOURCES_ANSWER = (
    "I could not find anything about this in the workspace's documents. "
    "Try rephrasing, or ingest documents that cover it."
)
RAG_OFF_ANSWER = (
    "Retrieval is off for this message (rag.enabled is false), and with no language model "
    "configured there is nothing to answer from: turn retrieval on, or configure an LLM."
)
NOT_ANSWERED = frozenset({NO_SOURCES_ANSWER, RAG_OFF_ANSWER})
"""The no-LLM answers that say nothing was found: the turn carries ``no_answer``."""
GREETING_ANSWER = "Hello! Ask me anything about the documents in this workspace."
THANKS_ANSWER = "You're welcome! Ask me anything else about the documents in this workspace."
GOODBYE_ANSWER = "Goodbye! Come back any time with a question about the workspace's documents."
CHIT_CHAT_ANSWERS = frozenset({GREETING_ANSWER, THANKS_ANSWER, GOODBYE_ANSWER})
"""The fixed replies to chit-chat: the same each time by design, never a repetition."""

_THANKS = re.compile(r"\b(?:thanks?|thank\s+you|thx|ty|cheers|appreciate)\b", re.IGNORECASE)
_GOODBYE = re.compile(r"\b(?:bye|goodbye|see\s+you|good\s+night|farewell)\b", re.IGNORECASE)


def chit_chat_answer(message: str) -> str:
    """The fixed reply to a message that asks nothing: thanks, a goodbye, or a greeting."""
    if _GOODBYE.search(message):
        return GOODBYE_ANSWER
    if _THANKS.search(message):
        return THANKS_ANSWER
    return GREETING_ANSWER


def _terms(text: str) -> list[str]:
    out = []
    for w in _WORD.findall(text.lower()):
        w = w.strip(".,'")
        if w.endswith("'s"):  # possessive: "Chaudhari's" is about Chaudhari
            w = w[:-2]
        if w and w not in _STOP:
            out.append(w[:6] if w.isalpha() else w)  # a crude stem: salary/salaries agree
    return out


def _compounds(text: str) -> set[str]:
    """The one-word nouns of ``text``'s phrasal verbs as terms ("backed up": "backup"):
    what the text also says, though not in so many words, so they match a question's
    terms without making the text longer."""
    return {c[:6] for c in phrasal_compounds(text)}


def _joined(sources: Sequence[Source]) -> str:
    return "\n".join(s["text"] for s in sources)


def query_coverage(query: str, text: str) -> float:
    """The share of ``query``'s content terms that ``text`` contains (0 when it has none).

    It compares drafts of one answer: a draft about the asked thing covers more of the
    question's terms than one about something else. An acronym the text spells out
    (:func:`~convrag.text.tokens.spelled_out`) counts as there.
    """
    wanted = set(_terms(query))
    if not wanted:
        return 0.0
    present = set(_terms(text)) | _compounds(text) | {a.lower() for a in spelled_out(text, query)}
    return round(len(wanted & present) / len(wanted), 4)


Similarity = Callable[[str, Sequence[str]], Sequence[float]]
"""The cosine similarity of each text to a query (the embedder's), for ranking sentences."""

DEFAULT_ANSWER_SENTENCES = 4
"""The most sentences an extractive answer quotes. Chosen by measurement with ``convrag
eval answers --set answer_sentences=N``: the best token F1 against MTRAG ClapNQ's reference
answers, and a gain on Cloud too (whose own best, 6, also gains on ClapNQ, by less);
citation precision drops a little (BENCHMARKS.md)."""

PROCEDURE_EXTRA_SENTENCES = 2
"""How many more sentences a how-to question's answer may quote: its answer is a series of
steps. Measured with ``convrag eval answers``: +.004 token F1 on MTRAG Cloud on top of
:func:`extractive_answer`'s continuation, no change on ClapNQ (BENCHMARKS.md)."""

_PROCEDURE = re.compile(
    r"\s*(?:how (?:do|can|could|should|would|does|did) (?:i|we|you|one|it|they)\b"
    r"|how to\b|what are the steps\b|(?:what are the )?steps (?:to|for)\b)",
    re.IGNORECASE,
)


def answer_length(query: str, sentences_wanted: int) -> int:
    """The most sentences an extractive answer to ``query`` quotes: ``sentences_wanted``,
    and :data:`PROCEDURE_EXTRA_SENTENCES` more for a how-to question."""
    return sentences_wanted + (PROCEDURE_EXTRA_SENTENCES if _PROCEDURE.match(query) else 0)


#: Candidate sentences whose meaning is compared with the query (the best by words first):
#: each costs one embedding.
SEMANTIC_CANDIDATES = 24

#: The "not found" evidence weighs the first 16 of those: it runs on the LLM path too,
#: where nothing else needs the other 8 embeddings, and on both MTRAG domains' recordings
#: (``benchmarks/abstention_floor.py``) no decision changed between 16 and 24.
EVIDENCE_CANDIDATES = 16


def ranked_by_words(
    query: str,
    sources: Sequence[Source],
    *,
    history: Sequence[HistoryTurn] = (),
    excluded_entities: Sequence[str] = (),
) -> list[tuple[float, int, int, str]]:
    """The quotable sentences of ``sources`` that share a word with ``query``, best first,
    as ``(score, source number, position, sentence)``.

    The score is the IDF of the shared words over the sentence's length, plus a little for
    an earlier source; a sentence already said in ``history`` counts half, one naming an
    excluded entity not at all, and questions (an FAQ's headings) are dropped while a
    statement is left.
    """
    q_terms = set(_terms(query))
    said = {" ".join(_terms(s)) for t in history for s in sentences(t["answer"])}
    excluded = [e.lower() for e in excluded_entities if e]
    # Each candidate's terms (its length) and what it says, its phrasal nouns included.
    candidates: list[tuple[int, int, str, list[str], set[str]]] = []
    for n, src in enumerate(sources, start=1):
        units = sentences(src["text"])
        for pos, sent in enumerate(units):
            if quotable(sent, first=pos == 0, last=pos == len(units) - 1):
                terms = _terms(sent)
                candidates.append((n, pos, sent, terms, set(terms) | _compounds(sent)))
    df: Counter[str] = Counter()
    for *_, says in candidates:
        df.update(says)
    total = max(1, len(candidates))
    scored: list[tuple[float, int, int, str]] = []
    for n, pos, sent, terms, says in candidates:
        if any(e in sent.lower() for e in excluded):
            continue
        hits = q_terms & says
        if not hits:
            continue
        idf = sum(math.log(1 + total / df[t]) for t in hits)
        score = idf / math.sqrt(max(4, len(terms))) + 0.15 / n
        if " ".join(terms) in said:
            score *= 0.5  # prefer new information, but an earlier fact may still answer
        scored.append((score, n, pos, sent))
    scored.sort(key=lambda x: -x[0])
    if any(not x[3].rstrip().endswith("?") for x in scored):
        scored = [x for x in scored if not x[3].rstrip().endswith("?")]
    return scored


def candidate_cosines(
    query: str, sources: Sequence[Source], similarity: Similarity, limit: int
) -> list[float]:
    """The cosine to ``query`` of the ``limit`` best sentences by words (those an
    extractive answer weighs first), in that order; empty when no sentence shares a word
    with the query."""
    scored = ranked_by_words(query, sources)[:limit]
    if not scored:
        return []
    return [float(c) for c in similarity(query, [s for *_, s in scored])]


def names_every_term(query: str, sources: Sequence[Source]) -> bool:
    """Whether one of the :data:`EVIDENCE_CANDIDATES` best sentences by words holds every
    content term of ``query``.

    On a record-style chunk ("Maria Lopez; Position: Product Manager; ...") the chunk's
    cosine, and even the sentence's, can be low while the sentence plainly says what was
    asked. Replayed on both MTRAG domains' recordings (``benchmarks/abstention_floor.py
    band``), letting such a sentence overrule the floor when no rare query term is missing
    changes one decision on each, a false abstention both times.
    """
    return any(
        query_coverage(query, sent) == 1.0
        for *_, sent in ranked_by_words(query, sources)[:EVIDENCE_CANDIDATES]
    )


def sentence_evidence(
    query: str, sources: Sequence[Source], similarity: Similarity, *, top: int = 2
) -> float | None:
    """The mean of the ``top`` highest :func:`candidate_cosines` of the
    :data:`EVIDENCE_CANDIDATES`, or the highest less :data:`LONE_SENTENCE_MARGIN` when
    that is more; None when no sentence shares a word with the query.

    This is the "not found" evidence: a passage can be close to a question's topic while
    none of its sentences says what was asked, which is how MTRAG's off-topic probes and
    unanswerable turns look to a chunk's cosine. Two sentences rather than one, so that a
    single sentence close by chance is not enough, unless it is closer by the margin.
    An acronym the sources spell out is weighed with its spelling (:func:`expand_acronyms`).
    """
    query = expand_acronyms(query, _joined(sources))
    return closest_evidence(
        candidate_cosines(query, sources, similarity, EVIDENCE_CANDIDATES), top=top
    )


def closest_evidence(cosines: Sequence[float], *, top: int = 2) -> float | None:
    """The mean of the ``top`` highest ``cosines``, or the highest less
    :data:`LONE_SENTENCE_MARGIN` when that is more; None when there are none."""
    closest = sorted(cosines, reverse=True)[:top]
    if not closest:
        return None
    return max(sum(closest) / len(closest), closest[0] - LONE_SENTENCE_MARGIN)


LONE_SENTENCE_MARGIN = 0.15
"""How much closer than the floor one sentence must be to count alone ("Business class
flights are only allowed for flights longer than 8 hours." for "Can I fly business
class?": 0.64, its next sentence 0.26). Replayed on both MTRAG domains' recordings, any
margin from 0.10 to 0.25 changes no decision; 0.15 is the middle of that range."""


def extractive_answer(
    query: str,
    sources: Sequence[Source],
    *,
    history: Sequence[HistoryTurn] = (),
    excluded_entities: Sequence[str] = (),
    max_sentences: int = DEFAULT_ANSWER_SENTENCES,
    similarity: Similarity | None = None,
) -> str:
    """The best sentences of the sources for ``query``, each followed by its ``[n]``.

    Sentences are ranked by the query words they share (:func:`ranked_by_words`) and,
    given ``similarity``, by their meaning's closeness to the query, so the sentence that
    answers beats one that only repeats the question's words. Sentences naming an excluded
    entity are skipped, so a regeneration really says something new. An acronym the
    sources spell out is matched by its spelling (:func:`expand_acronyms`).
    """
    if not sources:
        return NO_SOURCES_ANSWER
    query = expand_acronyms(query, _joined(sources))
    scored = ranked_by_words(query, sources, history=history, excluded_entities=excluded_entities)
    excluded = [e.lower() for e in excluded_entities if e]
    if similarity is not None and scored:
        scored = _by_meaning(query, scored[:SEMANTIC_CANDIDATES], similarity)
    matched = {x[3] for x in scored}
    if scored:
        # Only the clearly relevant: a sentence scoring under 60 % of the best one answers
        # a different question (John Doe's record when Prasad's was asked for).
        floor = 0.6 * scored[0][0]
        scored = [x for x in scored if x[0] >= floor]
    weak = matched - {x[3] for x in scored}
    picked: list[tuple[int, int, str]] = []
    per_source: Counter[int] = Counter()
    chosen_text: set[str] = set()
    for _, n, pos, sent in scored:
        if names_a_section(sent):
            pos, sent = _under_heading(sources[n - 1]["text"], pos)
        if per_source[n] >= 2 or not sent or sent in chosen_text:
            continue
        chosen_text.add(sent)
        picked.append((n, pos, sent))
        per_source[n] += 1
        if len(picked) >= max_sentences:
            break
    if picked:
        _continue(picked, sources, chosen_text | weak, max_sentences, excluded)
    else:
        units = sentences(sources[0]["text"])
        first = next(
            (
                u
                for pos, u in enumerate(units)
                if quotable(u, first=pos == 0, last=pos == len(units) - 1)
                and not any(e in u.lower() for e in excluded)
            ),
            None,
        )
        if first is None:
            return NO_SOURCES_ANSWER
        picked = [(1, 0, first)]
    picked.sort(key=lambda x: (x[0], x[1]))
    return " ".join(f"{sent} [{n}]" for n, _, sent in picked)


def _under_heading(text: str, pos: int) -> tuple[int, str]:
    """The first statement after the heading at ``pos`` of ``text``, with its position, or
    ``(pos, "")`` when none follows before the next heading or the chunk's end."""
    units = sentences(text)
    for k in range(pos + 1, len(units)):
        if names_a_section(units[k]) or looks_like_heading(units[k]):
            break
        if quotable(units[k], first=False, last=k == len(units) - 1):
            return k, units[k]
    return pos, ""


LIST_ITEMS_QUOTED = 10
"""The most items of a list an answer quotes after the sentence that introduces it."""


def _continue(
    picked: list[tuple[int, int, str]],
    sources: Sequence[Source],
    skip: set[str],
    max_sentences: int,
    excluded: Sequence[str],
) -> None:
    """Quote the sentence after the best one too, in place of the weakest pick, unless it
    is in ``skip`` (already quoted, or matched the question's words too weakly: the next
    record of a table answers a different question).

    An answer often runs on past its first sentence ("The tax is 5 %. It applies to ..."),
    while the next-best sentence by score is often another source's restatement. Measured
    with ``convrag eval answers``: token F1 +.006 on MTRAG ClapNQ and +.009 on Cloud,
    citation precision +.015 on both; the share of answers citing a gold passage falls
    .015 on ClapNQ (BENCHMARKS.md).
    """
    n, pos, best = picked[0]
    units = sentences(sources[n - 1]["text"])
    if pos + 1 >= len(units):
        return
    if best.rstrip().endswith(":"):
        # "Follow these steps:" is answered by the steps that follow it.
        items: list[tuple[int, int, str]] = []
        for k in range(pos + 1, min(len(units), pos + 1 + LIST_ITEMS_QUOTED)):
            if not (LIST_ITEM.match(units[k]) and quotable(units[k], first=False, last=False)):
                break  # the list ended (a numbered heading is not one of its items)
            items.append((n, k, units[k]))
        if items:
            others = [p for p in picked[1:] if p[2] not in {i[2] for i in items}]
            picked[:] = [picked[0], *items, *others[: max(0, max_sentences - 1 - len(items))]]
            return
    nxt = units[pos + 1]
    if (
        "; " in best  # a record or a table row is whole; the next one is another's
        or "; " in nxt
        or nxt in skip
        or nxt.rstrip().endswith("?")
        or any(e in nxt.lower() for e in excluded)
        or not quotable(nxt, first=False, last=pos + 1 == len(units) - 1)
    ):
        return
    if len(picked) >= max_sentences:
        picked.pop()
    picked.insert(1, (n, pos + 1, nxt))


def _by_meaning(
    query: str, scored: list[tuple[float, int, int, str]], similarity: Similarity
) -> list[tuple[float, int, int, str]]:
    """Re-rank word-matched sentences by ``cosine + WORD_WEIGHT * word score / best``,
    plus :data:`ANSWER_TYPE_BONUS` for a sentence holding the kind of answer the question
    asks for (:func:`expected_answer`)."""
    best = scored[0][0]
    cosines = similarity(query, [sent for *_, sent in scored])
    expects = expected_answer(query)
    rescored = [
        (
            float(cos)
            + WORD_WEIGHT * score / best
            + (ANSWER_TYPE_BONUS if expects is not None and expects.search(sent) else 0.0),
            n,
            pos,
            sent,
        )
        for (score, n, pos, sent), cos in zip(scored, cosines, strict=True)
    ]
    rescored.sort(key=lambda x: -x[0])
    return rescored


#: How much the word score counts beside the cosine when both rank sentences.
WORD_WEIGHT = 0.5

ANSWER_TYPE_BONUS = 0.1
"""What holding the asked-for kind of answer adds to a sentence's meaning score (a tenth
of the cosine's range). With the acronym matching, ``convrag eval answers`` gives ROUGE-L
recall .290 → .292 on MTRAG ClapNQ and leaves Cloud unchanged (BENCHMARKS.md, session 9);
0.2 scored .001 under 0.1 on ClapNQ, and the two score alike on the walkthrough."""

_NUMBER = re.compile(
    r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty"
    r"|forty|fifty|hundred|thousand|million|billion|dozen|half|once|twice)\b",
    re.IGNORECASE,
)
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(
    r"\b(?:1[0-9]{3}|20[0-9]{2})s?\b"
    rf"|\b{_MONTH}\s+\d|\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}"
    r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|century|decade|ago"
    r"|today|tomorrow|yesterday|before|after|during|until|since|within)\b"
    r"|\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b",
    re.IGNORECASE,
)
_FREQUENCY = re.compile(
    r"\bevery\b|\b(?:hourly|daily|weekly|monthly|quarterly|yearly|annually|once|twice"
    r"|always|never|regularly)\b|\bper\s+(?:hour|day|week|month|quarter|year)\b"
    r"|\btimes?\s+(?:a|an|per|each)\b",
    re.IGNORECASE,
)
_LEAD = r"^\W*(?:(?:and|but|so|ok|okay|then|also)\W+)*"
_ASKS: tuple[tuple[re.Pattern[str], re.Pattern[str]], ...] = (
    (re.compile(_LEAD + r"how\s+(?:often|frequently)\b", re.IGNORECASE), _FREQUENCY),
    (
        re.compile(
            _LEAD + r"(?:when|(?:what|which|in\s+what|in\s+which)\s+(?:year|date|day|month"
            r"|time|century|decade))\b",
            re.IGNORECASE,
        ),
        _DATE,
    ),
    (
        re.compile(
            _LEAD + r"(?:how\s+(?:many|much|long|old|far|big|large|tall|high|fast|heavy)"
            r"|what\s+(?:percentage|percent|number|amount|share|proportion))\b",
            re.IGNORECASE,
        ),
        _NUMBER,
    ),
)


def expected_answer(question: str) -> re.Pattern[str] | None:
    """What a sentence answering ``question`` holds, by the question's opening words: a
    frequency for "how often", a date or time for "when", a number for "how many"; None
    for other questions.

    The expected answer type of question answering: a sentence about the asked thing that
    also holds a number answers "how many" more often than one that only repeats its words.
    """
    return next((kind for asks, kind in _ASKS if asks.search(question)), None)


def reformat_previous(message: str, history: Sequence[HistoryTurn]) -> str:
    """No-LLM handling of "format that as a table" / "make it shorter" requests."""
    if not history:
        return "There is no earlier answer to reformat yet; ask a question first."
    previous = history[-1]["answer"]
    parts = sentences(previous)
    lowered = message.lower()
    if "table" in lowered:
        rows = "\n".join(f"| {i} | {p.replace('|', '/')} |" for i, p in enumerate(parts, 1))
        return f"| # | point |\n|---|---|\n{rows}"
    if any(w in lowered for w in ("short", "brief", "summar", "tl;dr", "concise")):
        return parts[0] if parts else previous
    if any(w in lowered for w in ("list", "bullet", "points")):
        return "\n".join(f"- {p}" for p in parts)
    return previous


def build_messages(
    question: str,
    rewritten: str,
    sources: Sequence[Source],
    history: Sequence[HistoryTurn],
    excluded_entities: Sequence[str],
    fence: prompts.Fence,
    no_answer: str,
) -> list[SystemMessage | HumanMessage]:
    """The answer prompt: sources and earlier turns go in as fenced, neutralised data; the
    model is told to reply ``no_answer`` alone when the sources do not hold the answer."""
    standalone = f"(Standalone form: {rewritten})\n" if rewritten and rewritten != question else ""
    exclusions = (
        prompts.EXCLUSIONS.format(entities=", ".join(excluded_entities))
        if excluded_entities
        else ""
    )
    user = prompts.SYNTHESIS_USER.format(
        conversation=prompts.conversation_context(history, fence),
        question=question,
        standalone=standalone,
        sources=prompts.format_sources(sources, fence),
        exclusions=exclusions,
    )
    system = prompts.SYNTHESIS_SYSTEM.format(
        boundary=fence.boundary, canary=fence.canary, no_answer=no_answer
    )
    return [SystemMessage(system), HumanMessage(user)]


def says_not_found(answer: str, no_answer: str) -> bool:
    """Whether the LLM's ``answer`` is the "not found" sentence it was told to reply alone
    (:func:`build_messages`): compared without case, markers, quotes and the closing
    punctuation. An answer that goes on after the sentence answers something, so it is
    not "not found"."""

    def bare(text: str) -> str:
        return " ".join(strip_markers(text).split()).strip(" \"'“”.!").lower()

    return bool(bare(no_answer)) and bare(answer) == bare(no_answer)


async def llm_answer(
    model: BaseChatModel,
    messages: Sequence[Any],
    *,
    on_token: Callable[[str], None],
    tools: Sequence[Any] = (),
) -> AIMessage:
    """Stream an answer; every content token goes to ``on_token``. Returns the full message
    (which may hold ``tool_calls`` when tools were bound)."""
    runnable: Any = model.bind_tools(list(tools)) if tools else model
    full: AIMessageChunk | None = None
    async for chunk in runnable.astream(list(messages), config={"tags": ["answer"]}):
        if not isinstance(chunk, AIMessageChunk):
            continue
        text = chunk.content if isinstance(chunk.content, str) else ""
        if text:
            on_token(text)
        full = chunk if full is None else full + chunk
    if full is None:
        return AIMessage(content="")
    return AIMessage(content=full.content, tool_calls=full.tool_calls)
