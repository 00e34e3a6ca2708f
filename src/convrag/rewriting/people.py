"""Who "he/she" and "they" are: the people and groups of the history.

The most salient person of a gender, the person a "what about X?" turned to, the names the
last exchange listed together ("A and B"), what an earlier "they" was rewritten to, the
plural phrase a question counted, and the people "Who earns more?" compares; with the two
ways a name is written into a query (:func:`join_names`, :func:`possessive`).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from convrag.rewriting.classify import WHAT_ABOUT_RE
from convrag.rewriting.history import (
    ANSWER_CHARS,
    PERSON_MIN,
    ConversationContext,
    Entity,
    Turn,
    display_name,
)
from convrag.text.entities import NameSpan, name_spans
from convrag.text.lexicon import (
    AUX,
    FRAME_WORDS,
    FUNCTION_WORDS,
    LOC_PREPS,
    META_NOUNS,
    NAME_SUFFIXES,
    PRONOUNS,
)
from convrag.text.tokens import Token, fold, is_plural_phrase, is_verb_like, tokenize


def asked_about(question: str, ranked: Sequence[Entity]) -> Entity | None:
    """The person a "what about X?" question turns to, when X names one."""
    m = WHAT_ABOUT_RE.match(question.strip())
    if not m:
        return None
    keys = {w for span in name_spans(tokenize(m.group("rest"))) for w in span.key.split()}
    people = [e for e in ranked if e.person >= PERSON_MIN and e.tokens & keys]
    return people[0] if len(people) == 1 else None


def person_for(ranked: Sequence[Entity], gender: str, ambiguous: Sequence[Entity]) -> str | None:
    """The most salient person, skipping those whose pronouns show the other gender.

    None when that person is one of ``ambiguous`` (several people just named together, none
    of them named before) and nothing but salience says which one the pronoun means.
    """
    for ent in sorted(ranked, key=lambda e: -e.person):
        if ent.person < PERSON_MIN:
            break
        if gender == "f" and ent.male > ent.female:
            continue
        if gender == "m" and ent.female > ent.male:
            continue
        if any(ent is other for other in ambiguous) and not (ent.male or ent.female):
            return None
        return display_name(ent)
    return None


def listed_people(history: Sequence[Turn], ctx: ConversationContext) -> list[str]:
    """Who "they" are: names listed together in the last exchange ("A and B")."""
    last = history[-1]
    return _coordinated(last.answer[:ANSWER_CHARS], ctx) or _coordinated(last.question, ctx)


def _coordinated(text: str, ctx: ConversationContext) -> list[str]:
    """People joined by "and"/commas in ``text`` ("Prasad Chaudhari and John Doe").

    Only short lists of person-like names count: "English, French and German" is not who
    "they" are.
    """
    toks = tokenize(text)
    spans = name_spans(toks)
    best: list[NameSpan] = []
    run: list[NameSpan] = []
    for span in spans:
        if run:
            gap = [t.low for t in toks[run[-1].last + 1 : span.first]]
            if gap and len(gap) <= 2 and all(g in (",", "and", "&") for g in gap):
                run.append(span)
                continue
            if len(run) > len(best):
                best = run
        run = [span]
    if len(run) > len(best):
        best = run
    best = [s for s in best if s.key.rstrip(".") not in NAME_SUFFIXES]  # "Buckley, Jr."
    if not 2 <= len(best) <= 4 or not all(person_like(s, ctx) for s in best):
        return []
    return [s.text for s in best]


def person_like(span: NameSpan, ctx: ConversationContext) -> bool:
    """Whether a name looks like a person (for "he/she", lists of people, comparisons)."""
    if span.article or span.acronym or span.joined or span.prev in LOC_PREPS:
        return False
    ent = ctx.entities.get(span.key)
    if ent is not None and ent.person > ent.thing:
        return True
    return span.ntok >= 2


def resolved_they(turn: Turn) -> str | None:
    """What "they/them" of ``turn`` was rewritten to ("Can I carry them over?" ->
    "Can I carry days of annual leave over?"): the next "they" most likely means it too."""
    if not turn.standalone:
        return None
    asked = [w.lower().strip("?.!,") for w in turn.question.split()]
    rewritten = turn.standalone.split()
    matcher = difflib.SequenceMatcher(a=asked, b=[w.lower().strip("?.!,") for w in rewritten])
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "replace" and i2 - i1 == 1 and asked[i1] in ("they", "them"):
            return " ".join(w.strip("?.!,") for w in rewritten[j1:j2])
    return None


def _counted(toks: tuple[Token, ...], k: int) -> str | None:
    """What "they" points to after a "how many" question whose counted phrase starts at
    ``k``: the plural subject after its verb when there is one ("How many hours of
    sunlight do tomatoes need?": the tomatoes), else the counted phrase with its "of"
    complement ("How many days of annual leave do I get?": the days of annual leave)."""
    verb = next((j for j in range(k + 1, len(toks)) if toks[j].low in AUX), None)
    if verb is None:
        return None
    if verb + 1 < len(toks):
        subject = toks[verb + 1]
        if subject.low in ("they", "these", "those", "it"):
            return None  # "How many hours do they need?": they are the topic, not the hours
        if (
            subject.kind == "word"
            and subject.low not in PRONOUNS
            and subject.low not in FUNCTION_WORDS
            and subject.low.endswith("s")
            and not subject.low.endswith(("ss", "us", "is"))
        ):
            return subject.text
    words = [x for x in toks[k:verb] if x.kind == "word"]
    head = next((i for i, x in enumerate(words) if x.low in FUNCTION_WORDS), len(words))
    if head and words[head - 1].low.endswith("s"):
        return " ".join(x.text for x in words)
    return None


_OBJECT_DETS = frozenset({"the", "a", "an", "his", "her", "its", "their", "my", "your", "our"})
"""Determiners that open a noun phrase: a word right before one is a verb, not a noun."""


def plural_phrase(question: str) -> str | None:
    """A plural noun phrase of a question ("those conversations") that "they" can point to."""
    toks = tokenize(question)
    for k, t in enumerate(toks):
        if t.low not in ("the", "these", "those", "some", "all", "many", "most") and k != 0:
            continue
        if t.low == "many" and k and toks[k - 1].low == "how":
            return _counted(toks, k + 1)
        j = k + 1 if k or t.low in FUNCTION_WORDS else k
        words: list[str] = []
        while (
            j < len(toks)
            and toks[j].kind == "word"
            and toks[j].low not in FUNCTION_WORDS
            and toks[j].low not in FRAME_WORDS
            and not is_verb_like(toks[j])
            and len(words) < 3
        ):
            words.append(toks[j].text)
            j += 1
        if j < len(toks) and toks[j].low in _OBJECT_DETS:
            words = words[:-1]  # "Who creates the spans?": a verb before its object
        if not words:
            continue
        head = words[-1].lower()
        if is_plural_phrase(head) and head not in META_NOUNS:
            det = "the " if t.low in ("the", "these", "those") else ""
            return det + " ".join(words)
    return None


def join_names(names: Sequence[str]) -> str:
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def possessive(name: str) -> str:
    return f"{name}'" if name.endswith("s") and not name.endswith("ss") else f"{name}'s"


def compared_people(history: Sequence[Turn], ctx: ConversationContext) -> list[str]:
    """Who "Who earns more?" compares: a list in the last exchange or a turn back, else the
    people the last answer names ("A earns $120,000 and B earns $95,000"), spelled out in
    full when an earlier turn did ("Prasad: $120,000" -> "Prasad Chaudhari")."""
    return [_fuller(n, ctx) for n in _compared_names(history, ctx)]


def _compared_names(history: Sequence[Turn], ctx: ConversationContext) -> list[str]:
    found = listed_people(history, ctx)
    if found:
        return found
    toks = tokenize(history[-1].answer[:ANSWER_CHARS])
    names: list[str] = []
    for span in name_spans(toks):
        if person_like(span, ctx) and span.text not in names:
            names.append(span.text)
    if 2 <= len(names) <= 4:
        return names
    if len(history) >= 2:
        return listed_people(history[:-1], ctx)
    return []


def _fuller(name: str, ctx: ConversationContext) -> str:
    """A one-word name spelled out as the history spelled it ("Prasad" -> "Prasad
    Chaudhari"), when exactly one multi-word person name starts or ends with it."""
    key = fold(name)
    if " " in key:
        return name
    matches = {
        display_name(ent)
        for ent in ctx.entities.values()
        if len(ent.key.split()) > 1
        and key in (ent.key.split()[0], ent.key.split()[-1])
        and ent.person >= ent.thing
    }
    return matches.pop() if len(matches) == 1 else name
