"""Whether the sources say what was asked: the sentence evidence behind "not found"."""

from __future__ import annotations

import re
from collections.abc import Sequence

from convrag.answering.ranking import Similarity, joined, query_coverage, ranked_by_words
from convrag.records import Source
from convrag.text.tokens import expand_acronyms

#: The "not found" evidence weighs the first 16 of those: it runs on the LLM path too,
#: where nothing else needs the other 8 embeddings, and on both MTRAG domains' recordings
#: (``benchmarks/abstention_floor.py``) no decision changed between 16 and 24.
EVIDENCE_CANDIDATES = 16


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
    content term of ``query``, its source's title counting as part of it ("Unused days
    carry over until 31 March." of the leave policy says what "Can I carry over unused
    leave?" asks; on both MTRAG domains and the walkthrough no decision changed).

    On a record-style chunk ("Maria Lopez; Position: Product Manager; ...") the chunk's
    cosine, and even the sentence's, can be low while the sentence plainly says what was
    asked. Replayed on both MTRAG domains' recordings (``benchmarks/abstention_floor.py
    band``), letting such a sentence overrule the floor when no rare query term is missing
    changes one decision on each, a false abstention both times.
    """
    return any(
        query_coverage(query, f"{sources[n - 1]['title'] or ''}\n{sent}") == 1.0
        for _, n, _, sent in ranked_by_words(query, sources)[:EVIDENCE_CANDIDATES]
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
    query = expand_acronyms(query, joined(sources))
    return closest_evidence(
        candidate_cosines(query, sources, similarity, EVIDENCE_CANDIDATES), top=top
    )


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def paragraph_evidence(
    query: str, sources: Sequence[Source], similarity: Similarity
) -> float | None:
    """The cosine to ``query`` of the paragraph that holds the closest of the
    :data:`EVIDENCE_CANDIDATES` sentences, when its chunk holds more than one paragraph;
    None otherwise (the chunk's own cosine says the same).

    The relevance floor was fitted on MTRAG's passages, each about a paragraph. A chunk
    of a real document packs several (800 characters, under its title and headings), and
    its cosine is diluted by the ones that say something else: "When did Daniel Okafor
    leave?" is 0.26 from its chunk and 0.58 from the paragraph that answers it. The
    paragraph puts such a chunk back on the scale the floor was fitted on.
    """
    query = expand_acronyms(query, joined(sources))
    scored = ranked_by_words(query, sources)[:EVIDENCE_CANDIDATES]
    if not scored:
        return None
    cosines = similarity(query, [s for *_, s in scored])
    _, n, _, sentence = scored[max(range(len(scored)), key=lambda i: cosines[i])]
    paragraphs = [p for p in _PARAGRAPH_BREAK.split(sources[n - 1]["text"]) if p.strip()]
    holding = [p.strip() for p in paragraphs if sentence.strip() in p]
    if len(paragraphs) < 2 or not holding:
        return None
    return float(similarity(query, holding[:1])[0])


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
