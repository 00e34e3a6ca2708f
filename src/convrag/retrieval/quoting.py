"""The no-LLM answer: the most relevant whole sentences of the sources, each with its
``[n]``; also the fallback when the LLM fails mid-turn."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from convrag.answering.replies import NO_SOURCES_ANSWER
from convrag.records import HistoryTurn, Source
from convrag.retrieval.policy import RetrievalPolicy, default_policy
from convrag.retrieval.ranking import (
    Similarity,
    joined,
    ranked_by_words,
    repeating,
    said_before,
    terms_of,
)
from convrag.text.entities import extract_entities
from convrag.text.lines import LIST_ITEM
from convrag.text.tokens import expand_acronyms
from convrag.text.units import (
    heads_a_section,
    is_question,
    looks_like_heading,
    names_a_section,
    quotable,
    sentences,
)

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


def extractive_answer(
    query: str,
    sources: Sequence[Source],
    *,
    history: Sequence[HistoryTurn] = (),
    excluded_entities: Sequence[str] = (),
    max_sentences: int = DEFAULT_ANSWER_SENTENCES,
    similarity: Similarity | None = None,
    policy: RetrievalPolicy | None = None,
) -> str:
    """The best sentences of the sources for ``query``, each followed by its ``[n]``.

    Sentences are ranked by the query words they share (:func:`ranked_by_words`) and,
    given ``similarity``, by their meaning's closeness to the query, so the sentence that
    answers beats one that only repeats the question's words. Sentences an earlier answer
    said that name an excluded entity are skipped (:func:`repeating`), so a regeneration
    really says something new. An acronym the
    sources spell out is matched by its spelling (:func:`expand_acronyms`). The
    ``policy`` (the packaged one when none is given) holds the numbers that weigh them.
    """
    if not sources:
        return NO_SOURCES_ANSWER
    policy = policy or default_policy()
    query = expand_acronyms(query, joined(sources))
    scored = ranked_by_words(
        query,
        sources,
        history=history,
        excluded_entities=excluded_entities,
        question_to_answer=policy.question_to_answer,
    )
    repeats = repeating(excluded_entities, said_before(history))
    if similarity is not None and scored:
        scored = _by_meaning(query, scored[: policy.semantic_candidates], similarity, policy)
    if scored and _names_an_absent_row(scored[0][3], query, sources):
        return NO_SOURCES_ANSWER
    if scored:
        # Only the clearly relevant: a sentence scoring under ``same_work_floor`` of the
        # best one answers a different question (John Doe's record when Prasad's was asked).
        floor = policy.same_work_floor * scored[0][0]
        scored = [x for x in scored if x[0] >= floor]
        scored = [scored[0], *_of_the_best_work(scored[1:], scored[0], sources, policy)]
    if scored and _fields(scored[0][3]):
        scored = [scored[0], *_records_of_the_asked(scored[1:], scored[0][3], query)]
    picked: list[tuple[int, int, str]] = []
    per_source: Counter[int] = Counter()
    chosen_text: set[str] = set()
    for _, n, pos, sent in scored:
        if heads_a_section(sent):
            pos, sent = _under_heading(sources[n - 1]["text"], pos)
        if per_source[n] >= 2 or not sent or sent in chosen_text:
            continue
        chosen_text.add(sent)
        picked.append((n, pos, sent))
        per_source[n] += 1
        if len(picked) >= max_sentences:
            break
    if picked:
        lead_in = policy.announced_sentences
        _continue(picked, sources, chosen_text, max_sentences, repeats, lead_in)
        picked = _announcements_whole(picked, sources, repeats, lead_in)
    else:
        first = _first_quotable(sources[0]["text"], repeats)
        if first is None:
            return NO_SOURCES_ANSWER
        picked = [(1, 0, first)]
    picked.sort(key=lambda x: (x[0], x[1]))
    return " ".join(f"{sent} [{n}]" for n, _, sent in picked)


def _first_quotable(text: str, repeats: Callable[[str], bool]) -> str | None:
    """The first sentence of ``text`` an answer may quote that says nothing repeated:
    what is quoted when no sentence shares a word with the question."""
    units = sentences(text)
    return next(
        (
            u
            for pos, u in enumerate(units)
            if quotable(u, first=pos == 0, last=pos == len(units) - 1)
            and not heads_a_section(u)
            and not repeats(u)
        ),
        None,
    )


def _of_the_best_work(
    scored: list[tuple[float, int, int, str]],
    best: tuple[float, int, int, str],
    sources: Sequence[Source],
    policy: RetrievalPolicy,
) -> list[tuple[float, int, int, str]]:
    """``scored`` less the sentences of works other than the ``best`` sentence's (sources
    with another title) that score under the policy's ``other_work_floor`` of it: an
    answer keeps to the document that answers, unless another is nearly as relevant."""
    title = sources[best[1] - 1]["title"]
    floor = policy.other_work_floor * best[0]
    return [x for x in scored if sources[x[1] - 1]["title"] == title or x[0] >= floor]


_FIELD = re.compile(r"([A-Z][\w /&()-]{0,40}):\s")


def _fields(unit: str) -> set[str]:
    """The field names of a record or table row ("Position: Engineer; Basic Salary: $1"),
    lower-cased; empty for a sentence."""
    if "; " not in unit:
        return set()
    return {m.group(1).lower() for part in unit.split("; ") if (m := _FIELD.match(part))}


def _names_an_absent_row(best: str, query: str, sources: Sequence[Source]) -> bool:
    """Whether ``best`` is a record and ``query`` names something (a capitalised name)
    that no source holds, title included: "What is the hotel limit per night in
    Africa?" of a table of other regions' limits, or a person the records do not list.
    A record is about its own key, so any row quoted would answer for another one."""
    if not _fields(best):
        return False
    held = "\n".join(f"{s['title'] or ''}\n{s['text']}" for s in sources).lower()
    return any(name.lower() not in held for name in extract_entities(query))


def _records_of_the_asked(
    scored: list[tuple[float, int, int, str]], best: str, query: str
) -> list[tuple[float, int, int, str]]:
    """``scored`` less the records (and table rows) that describe something else than the
    best record: one lacking an asked term the best one holds and adding none it lacks.
    After "What is Prasad Chaudhari's salary?", "What about his basic salary?" quotes his
    record, not also John Doe's (which shares "basic salary" and clears the floor once
    Prasad's record, said before, counts half); "hotels in Europe and Asia" keeps both
    rows, each holding a region the other lacks. Sentences are not records and stay.
    """
    asked = terms_of(query)
    held = asked & terms_of(best)

    def other(unit: str) -> bool:
        own = asked & terms_of(unit)
        return bool(_fields(unit)) and not held <= own and not own - held

    return [x for x in scored if not other(x[3])]


def _under_heading(text: str, pos: int) -> tuple[int, str]:
    """The first statement after the heading at ``pos`` of ``text``, with its position, or
    ``(pos, "")`` when none follows before the next heading or the chunk's end."""
    units = sentences(text)
    for k in range(pos + 1, len(units)):
        if names_a_section(units[k]) or looks_like_heading(units[k]):
            break
        if is_question(units[k]):
            continue  # an FAQ's question under its heading: its answer follows
        if quotable(units[k], first=False, last=k == len(units) - 1):
            return k, units[k]
    return pos, ""


LIST_ITEMS_QUOTED = 10
"""The most items of a list an answer quotes after the sentence that introduces it."""

_ANNOUNCES = re.compile(
    r"\b(?:the following|as follows|(?:several|a few|some|many|two|three|four|five|various"
    r"|these|multiple) (?:\w+ )?(?:reasons|ways|steps|options|things|cases|rules|kinds|types"
    r"|methods|approaches|differences|advantages|benefits|drawbacks|requirements))\b",
    re.IGNORECASE,
)


def announces(sent: str) -> bool:
    """Whether ``sent`` announces what follows it: a lead-in ending with a colon
    ("Acceptable string values for True are:"), or one naming "the following" or "several
    reasons": quoted alone, it answers nothing."""
    return sent.rstrip().endswith(":") or bool(_ANNOUNCES.search(sent))


def _announced(
    units: Sequence[str], pos: int, repeats: Callable[[str], bool], after_lead_in: int
) -> list[int]:
    """The positions of what ``units[pos]`` announces: the list items after it (at most
    :data:`LIST_ITEMS_QUOTED`), else the statements after it up to the next heading (one
    after a colon, ``after_lead_in`` after "several reasons")."""
    items: list[int] = []
    for k in range(pos + 1, min(len(units), pos + 1 + LIST_ITEMS_QUOTED)):
        if not (LIST_ITEM.match(units[k]) and quotable(units[k], first=False, last=False)):
            break  # the list ended (a numbered heading is not one of its items)
        items.append(k)
    if items:
        return items
    wanted = 1 if units[pos].rstrip().endswith(":") else after_lead_in
    for k in range(pos + 1, len(units)):
        unit = units[k]
        last = k == len(units) - 1
        if len(items) >= wanted or (heads_a_section(unit) and not last) or is_question(unit):
            break
        # After a colon, a last unit without a full stop is the announced value
        # ("false, off, no, 0"), not a cut-off sentence.
        whole = quotable(unit, first=False, last=last and wanted > 1) or "```" in unit
        if repeats(unit) or not whole:
            break
        items.append(k)
    return items


def _announcements_whole(
    picked: list[tuple[int, int, str]],
    sources: Sequence[Source],
    repeats: Callable[[str], bool],
    after_lead_in: int,
) -> list[tuple[int, int, str]]:
    """``picked`` with each later pick that :func:`announces` what follows quoted with it
    (the best one's is already, by :func:`_continue`)."""
    out = picked[:1]
    for n, pos, sent in picked[1:]:
        if (n, pos, sent) in out:
            continue
        if not announces(sent):
            out.append((n, pos, sent))
            continue
        units = sentences(sources[n - 1]["text"])
        span = [(n, k, units[k]) for k in _announced(units, pos, repeats, after_lead_in)]
        out += [p for p in [(n, pos, sent), *span] if p not in out]
    return out


def _continue(
    picked: list[tuple[int, int, str]],
    sources: Sequence[Source],
    skip: set[str],
    max_sentences: int,
    repeats: Callable[[str], bool],
    after_lead_in: int,
) -> None:
    """Quote the sentence after the best one too, in place of the weakest pick, unless it
    is in ``skip`` (already quoted), a heading, a question or a record (a table's next
    record answers a different question).

    An answer often runs on past its first sentence ("The tax is 5 %. It applies to ..."),
    while the next-best sentence by score is often another source's restatement. Measured
    with ``convrag eval answers``: token F1 +.006 on MTRAG ClapNQ and +.009 on Cloud,
    citation precision +.015 on both; the share of answers citing a gold passage falls
    .015 on ClapNQ (BENCHMARKS.md). The next sentence is quoted however weakly it matches
    the question's words on its own ("The default value is 4." after "The tab_length
    keyword sets the length of tabs."): BENCHMARKS.md "2026-12-07 (p)".

    A best sentence that :func:`announces` what follows is quoted with it: "Follow these
    steps:" is answered by the steps.
    """
    n, pos, best = picked[0]
    units = sentences(sources[n - 1]["text"])
    if pos + 1 >= len(units):
        return
    if announces(best):
        span = [(n, k, units[k]) for k in _announced(units, pos, repeats, after_lead_in)]
        if span:
            quoted = {i[2] for i in span}
            others = [p for p in picked[1:] if p[2] not in quoted]
            picked[:] = [picked[0], *span, *others[: max(0, max_sentences - 1 - len(span))]]
            return
    nxt = units[pos + 1]
    if (
        "; " in best  # a record or a table row is whole; the next one is another's
        or "; " in nxt
        or nxt in skip
        or is_question(nxt)
        or heads_a_section(nxt)
        or repeats(nxt)
        or not quotable(nxt, first=False, last=pos + 1 == len(units) - 1)
    ):
        return
    if len(picked) >= max_sentences:
        picked.pop()
    picked.insert(1, (n, pos + 1, nxt))


SENTENCE_FEATURES = (
    "words",
    "answer_type",
    "first_source",
    "lead",
    "heading",
    "introduces",
    "code",
    "length",
)
"""What the quoted-answer ranker may weigh beside a sentence's cosine to the query
(:func:`sentence_features`)."""


def sentence_features(
    sent: str, n: int, pos: int, words: float, expects: re.Pattern[str] | None
) -> dict[str, float]:
    """One candidate sentence's named features: its words-in-common score over the best
    one's (``words``), whether it holds the kind of answer the question asks for
    (:func:`expected_answer`), its source's rank (1/n), whether it opens its passage,
    reads as a heading, introduces what follows (ends with a colon), holds code, and its
    length (in 400s of characters, at most 1)."""
    return {
        "words": words,
        "answer_type": float(expects is not None and bool(expects.search(sent))),
        "first_source": 1.0 / n,
        "lead": float(pos == 0),
        "heading": float(looks_like_heading(sent)),
        "introduces": float(sent.rstrip().endswith(":")),
        "code": float("`" in sent),
        "length": min(len(sent), 400) / 400,
    }


def sentence_score(cosine: float, features: dict[str, float], model: dict[str, float]) -> float:
    """A sentence's rank score: its cosine plus each feature at the policy's
    ``sentence_model`` weight (in units of the cosine's)."""
    return cosine + sum(w * features[name] for name, w in model.items())


def _by_meaning(
    query: str,
    scored: list[tuple[float, int, int, str]],
    similarity: Similarity,
    policy: RetrievalPolicy,
) -> list[tuple[float, int, int, str]]:
    """Re-rank word-matched sentences by the fitted sentence model (:func:`sentence_score`
    over :func:`sentence_features`)."""
    best = scored[0][0]
    cosines = similarity(query, [sent for *_, sent in scored])
    expects = expected_answer(query)
    rescored = [
        (
            sentence_score(
                float(cos),
                sentence_features(sent, n, pos, score / best, expects),
                policy.sentence_model,
            ),
            n,
            pos,
            sent,
        )
        for (score, n, pos, sent), cos in zip(scored, cosines, strict=True)
    ]
    rescored.sort(key=lambda x: -x[0])
    return rescored


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
