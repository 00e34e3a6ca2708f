"""The names a text mentions, with what each mention's context says about it.

:func:`mentions` reads one text of the history (a question, or an answer's opening) for
:class:`~convrag.rewriting.history.ConversationContext`: each name, whether it is a
sentence subject or a place, and how likely "he/she" or "they" could point to it.
:func:`modifies_next` tells a modifier ("Indian nationalists", "Sickle cell") from a
referent. Cached per text, so a growing conversation re-reads only its newest turn.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from convrag.text.entities import NameSpan, name_spans
from convrag.text.lexicon import (
    ADVERBS,
    AUX,
    DETS,
    FEMALE,
    FUNCTION_WORDS,
    GROUP_HEADS,
    LOC_PREPS,
    MALE,
    NOT_NAME,
    ORG_HEADS,
    PAST_VERBS,
    PREPS,
    TIME_WORDS,
    TITLES,
)
from convrag.text.tokens import Token, is_verb_like, tokenize

__all__ = ["GROUP_BASE", "Mention", "mentions", "modifies_next"]

GROUP_BASE = 0.3  # any name might be what "they" means; plurals and groups more so
_WEAK_PERSON = 0.2  # "Indian nationalists", "Sickle cell": a modifier, hardly a person
# The shape of a nationality or language adjective ("Indian", "Korean", "Chinese", "British").
_ADJECTIVE_RE = re.compile(r"(?:an|ese|ish)$")
_BE = frozenset({"is", "are", "was", "were", "be", "been", "being", "am"})


def _sentences(toks: tuple[Token, ...]) -> list[tuple[int, int]]:
    """Token index ranges of the sentences of a text."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for k, t in enumerate(toks):
        if t.kind == "punct" and t.text in ".!?" and k > start:
            bounds.append((start, k + 1))
            start = k + 1
    if start < len(toks):
        bounds.append((start, len(toks)))
    return bounds


def _is_subject(toks: tuple[Token, ...], span: NameSpan, sent_start: int) -> bool:
    """The span starts its clause and a verb-like word follows ("Martin was hired")."""
    first = span.first - (1 if span.article else 0)
    opens = first == sent_start or (first > 0 and toks[first - 1].text == ",")
    if not opens or span.last + 1 >= len(toks):
        return False
    k = span.last + 1
    if toks[k].low in ADVERBS and k + 1 < len(toks):
        k += 1
    nxt = toks[k]
    return (
        nxt.low in AUX
        or nxt.low in PAST_VERBS
        or (nxt.kind == "word" and nxt.text[0].islower() and nxt.low.endswith("ed"))
    )


class Mention(NamedTuple):
    """One occurrence of a name in a text, with what its context says about it."""

    text: str
    key: str
    article: bool
    subject: bool
    personish: float  # how likely "he/she" could point to it
    groupish: float  # how likely "they" could point to it
    female: bool  # followed by she/her in its sentence (as the sentence subject)
    male: bool
    named: bool  # used as a name: not only a modifier, nor capitalised by its position


@lru_cache(maxsize=4096)
def mentions(text: str, places: bool, question: bool) -> tuple[tuple[Mention, ...], int]:
    """The name occurrences of ``text`` and the index of the first person-like subject.

    Cached per text so that a growing conversation re-reads only its newest turn. ``places``
    marks the answer to a "where" question (its non-subject names are places); ``question``
    marks user text, whose capitalised first word is often not a name.
    """
    toks = tokenize(text)
    spans = name_spans(toks)
    out: list[Mention] = []
    first_subject = -1
    if not spans:
        return (), first_subject
    sents = _sentences(toks)
    prev_loc_end = -2
    for span in spans:
        if span.key in TIME_WORDS or span.key in NOT_NAME:
            continue
        sent = next(((a, b) for a, b in sents if a <= span.first < b), (0, len(toks)))
        subject = _is_subject(toks, span, sent[0])
        loc = _is_place(toks, span, subject=subject, places=places, prev_loc_end=prev_loc_end)
        if loc:
            prev_loc_end = span.last
        mention = _mention(toks, span, sent, subject=subject, loc=loc, question=question)
        if subject and mention.personish >= 1.0 and first_subject < 0:
            first_subject = len(out)
        out.append(mention)
    return tuple(out), first_subject


def _before(span: NameSpan) -> int:
    """The index of the token before ``span`` and its article (-1 at the start)."""
    return span.first - (2 if span.article else 1)


def _is_possessive(toks: tuple[Token, ...], span: NameSpan) -> bool:
    """The name ends in "'s" ("Chaudhari's salary")."""
    return toks[span.last].text.endswith(("'s", "’s"))


def _is_place(
    toks: tuple[Token, ...], span: NameSpan, *, subject: bool, places: bool, prev_loc_end: int
) -> bool:
    """Whether a mention names a place: the object of "in/at/near ...", a non-subject name
    in the answer to a "where" question, or a name right after a place ("Ridgeland,
    Mississippi"; ``prev_loc_end`` is where the last place ended). A possessive is none."""
    before = _before(span)
    return not _is_possessive(toks, span) and (
        span.prev in LOC_PREPS
        or (places and not subject)
        # "Ridgeland, Mississippi": a name right after a place is a place
        or (before >= 0 and toks[before].text == "," and before - 1 == prev_loc_end)
    )


def _mention(
    toks: tuple[Token, ...],
    span: NameSpan,
    sent: tuple[int, int],
    *,
    subject: bool,
    loc: bool,
    question: bool,
) -> Mention:
    """One mention of a name, with its evidence of being a person, a group or a name."""
    possessive = _is_possessive(toks, span)
    personish = _personish(toks, span, subject=subject, loc=loc, question=question)
    modifier = modifies_next(toks, span)
    if modifier:
        personish *= _WEAK_PERSON
    # "Dynamic secrets expire": one word that opens a sentence is capitalised anyway,
    # unless it is the subject of a verb ("Dali grew up").
    positional = span.ntok == 1 and toks[span.first].sent_start and not subject
    named = not modifier and (not positional or possessive)
    female, male = _pronouns_after(toks, span, sent) if subject else (False, False)
    return Mention(
        span.text,
        span.key,
        span.article,
        subject,
        personish,
        _groupish(span),
        female,
        male,
        named,
    )


def _personish(
    toks: tuple[Token, ...], span: NameSpan, *, subject: bool, loc: bool, question: bool
) -> float:
    """How likely "he/she" could point to a mention (before the modifier test): a subject
    starts with twice the evidence, and each clue of the context scales it, in order."""
    before = _before(span)
    quoted = before >= 0 and toks[before].text in "\"“'‘"
    lastw = span.key.split()[-1]
    factors = (
        (loc, 0.1),
        (span.article or span.joined or (span.ntok > 1 and lastw in ORG_HEADS), 0.1),
        # "Deputy Prime Minister" is a role, not a referent
        (all(w in TITLES for w in span.key.split()), 0.1),
        # "When did Kadyrov become ...": the question's subject
        (question and span.first >= 1 and toks[span.first - 1].low in AUX, 2.0),
        (span.acronym or quoted, 0.2),
        (_is_possessive(toks, span), 1.5),
        (span.ntok > 3, 0.3),
    )
    personish = 2.0 if subject else 1.0
    for applies, factor in factors:
        if applies:
            personish *= factor
    if span.ntok >= 2 and personish >= 1.0:
        personish *= 1.2
    if span.ntok == 1 and not subject and toks[span.first].sent_start and question:
        personish *= 0.2  # "Notable people she ...?": capitalised by position
    return personish


def _pronouns_after(
    toks: tuple[Token, ...], span: NameSpan, sent: tuple[int, int]
) -> tuple[bool, bool]:
    """Whether "she/her" and whether "he/him" follow a subject in its sentence or open the
    next one ("Hill was born ... . She ...")."""
    after = {toks[k].low for k in range(span.last + 1, sent[1])}
    if sent[1] < len(toks):
        after.add(toks[sent[1]].low)  # "Hill was born ... . She ..."
    return bool(after & FEMALE), bool(after & MALE)


def _groupish(span: NameSpan) -> float:
    """How likely "they" could point to a name: plural, "the ...", or a group noun."""
    groupish = GROUP_BASE + (1.0 if span.plural else 0.0) + (0.5 if span.article else 0.0)
    if span.key.split()[-1] in GROUP_HEADS:
        groupish += 1.0
    return groupish


def modifies_next(toks: tuple[Token, ...], span: NameSpan) -> bool:
    """A one-word name right before a lowercase noun: a modifier, not a referent.

    "Indian nationalists", "the Indian independence movement", "How is Sickle cell
    treated?": an adjective, or the first word of a longer term that the writer capitalised.
    A name is also followed by a lowercase verb ("Did Gramm leave", "Dali paints"), so this
    needs a demonym-shaped word ("Indian", "Chinese", "British") or a word before the name
    that a subject does not have: a determiner, a preposition or a form of "be".
    """
    if span.ntok != 1 or span.acronym or span.last + 1 >= len(toks):
        return False
    if toks[span.last].text.endswith(("'s", "’s")):
        return False
    nxt = toks[span.last + 1]
    if (
        nxt.kind != "word"
        or not nxt.text.islower()
        or nxt.low in FUNCTION_WORDS
        or nxt.low in ADVERBS
        or is_verb_like(nxt)
    ):
        return False
    before = span.first - (2 if span.article else 1)
    return (
        bool(_ADJECTIVE_RE.search(span.key))
        or span.article
        or (before >= 0 and toks[before].low in PREPS | DETS | _BE)
    )
