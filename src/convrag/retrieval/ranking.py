"""Sentences of the sources ranked by the question's words, and the terms they are
compared by: the first pass of the extractive answer and of the "not found" evidence."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from functools import lru_cache
from itertools import pairwise

from convrag.citations import strip_markers
from convrag.records import HistoryTurn, Source
from convrag.text.tokens import phrasal_compounds, spelled_out
from convrag.text.units import is_question, quotable, sentences

_WORD = re.compile(r"[^\W_](?:[^\W_]|[$,.%'-])*(?:[^\W_]|%)|[^\W_]")
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


def joined(sources: Sequence[Source]) -> str:
    """The sources' texts as one, for spelling out the question's acronyms."""
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


def said_before(history: Sequence[HistoryTurn]) -> set[str]:
    """The sentences of ``history``'s answers, as their terms: what a sentence must match
    to count as said already."""
    return {" ".join(_terms(s)) for t in history for s in sentences(strip_markers(t["answer"]))}


def is_said(sentence: str, said: set[str]) -> bool:
    """Whether ``sentence`` is one of the :func:`said_before` sentences."""
    return " ".join(_terms(sentence)) in said


def terms_of(text: str) -> set[str]:
    """The content terms of ``text``, crudely stemmed, as questions and sentences meet."""
    return set(_terms(text))


def repeating(entities: Sequence[str], said: set[str]) -> Callable[[str], bool]:
    """A test of whether a sentence repeats an earlier answer about a repeated entity: it
    is one of the ``said`` sentences (:func:`said_before`) and names one of ``entities`` as
    a whole word in its own case, since entities are names ("Free", a table cell's plan, is
    not the "free" of "changed free of charge"). A regeneration leaves such sentences out
    and takes the next relevant ones."""
    names = [e for e in entities if e.strip()]
    if not names:
        return lambda _sentence: False
    pattern = re.compile(
        "|".join(rf"(?<![^\W_]){re.escape(e)}(?![^\W_])" for e in sorted(names, key=len))
    )
    return lambda sentence: pattern.search(sentence) is not None and is_said(sentence, said)


def _answers_of_matched_questions(
    scored: list[tuple[float, int, int, str]],
    candidates: Sequence[tuple[int, int, str, tuple[str, ...], frozenset[str]]],
    repeats: Callable[[str], bool],
    share: float,
) -> list[tuple[float, int, int, str]]:
    """``scored`` with the statement right after each matched question (an FAQ's answer)
    scored at least ``share`` of the question's score: the question is dropped while a
    statement is left, and its words are the best evidence of what its answer is about."""
    following = {(a[0], a[1]): b for a, b in pairwise(candidates)}
    at = {(n, pos): k for k, (_, n, pos, _) in enumerate(scored)}
    out = list(scored)
    for score, n, pos, sent in scored:
        nxt = following.get((n, pos))
        if not is_question(sent) or nxt is None or nxt[:2] != (n, pos + 1) or is_question(nxt[2]):
            continue
        if repeats(nxt[2]):
            continue
        inherited = share * score
        k = at.get((n, pos + 1))
        if k is None:
            at[(n, pos + 1)] = len(out)
            out.append((inherited, n, pos + 1, nxt[2]))
        elif out[k][0] < inherited:
            out[k] = (inherited, n, pos + 1, nxt[2])
    return out


@lru_cache(maxsize=4096)
def _quotable_terms(text: str) -> tuple[tuple[int, str, tuple[str, ...], frozenset[str]], ...]:
    """A passage's quotable sentences: position, sentence, its terms and what it says (its
    terms and phrasal nouns). Kept per passage text: a turn weighs the same passages for
    several queries and for its answer, and a conversation keeps meeting them."""
    units = sentences(text)
    out = []
    for pos, sent in enumerate(units):
        if quotable(sent, first=pos == 0, last=pos == len(units) - 1):
            terms = tuple(_terms(sent))
            out.append((pos, sent, terms, frozenset(terms) | _compounds(sent)))
    return tuple(out)


def ranked_by_words(
    query: str,
    sources: Sequence[Source],
    *,
    history: Sequence[HistoryTurn] = (),
    excluded_entities: Sequence[str] = (),
    question_to_answer: float,
) -> list[tuple[float, int, int, str]]:
    """The quotable sentences of ``sources`` that share a word with ``query``, best first,
    as ``(score, source number, position, sentence)``.

    The score is the IDF of the shared words over the sentence's length, plus a little for
    an earlier source; a sentence already said in ``history`` counts half, and not at all
    when it names an excluded entity (:func:`repeating`); questions (an FAQ's headings) are
    dropped while a statement is left, the one answering a matched question scored
    ``question_to_answer`` of it.
    """
    q_terms = set(_terms(query))
    said = said_before(history)
    repeats = repeating(excluded_entities, said)
    # Each candidate's terms (its length) and what it says, its phrasal nouns included.
    candidates = [
        (n, pos, sent, terms, says)
        for n, src in enumerate(sources, start=1)
        for pos, sent, terms, says in _quotable_terms(src["text"])
    ]
    df: Counter[str] = Counter()
    for *_, says in candidates:
        df.update(says)
    total = max(1, len(candidates))
    scored: list[tuple[float, int, int, str]] = []
    for n, pos, sent, terms, says in candidates:
        if repeats(sent):
            continue
        hits = q_terms & says
        if not hits:
            continue
        idf = sum(math.log(1 + total / df[t]) for t in hits)
        score = idf / math.sqrt(max(4, len(terms))) + 0.15 / n
        if " ".join(terms) in said:
            score *= 0.5  # prefer new information, but an earlier fact may still answer
        scored.append((score, n, pos, sent))
    scored = _answers_of_matched_questions(scored, candidates, repeats, question_to_answer)
    scored.sort(key=lambda x: -x[0])
    if any(not is_question(x[3]) for x in scored):
        scored = [x for x in scored if not is_question(x[3])]
    return scored
