"""What the conversation so far is about, for reading a follow-up against it.

:class:`Turn` is one earlier exchange. :func:`~convrag.rewriting.anaphora.anaphors`
finds the pronouns of a message that point outside it, leaving out dummy "it" ("is it possible
to ...") and pronouns whose antecedent is in the message itself. :class:`ConversationContext`
is a salience model over the history: every name the turns mention (read by
:mod:`~convrag.rewriting.mentions`), with the evidence that it is the person "he/she" points
to, the group "they" points to, or the thing "it" points to.

The user's questions weigh more than the answers (answers can be long and mention many side
entities), and recent turns more than old ones. Who "he/she" is fades slowly, because the main
character of a conversation persists; what "it/that" is fades fast, because the topic moves
with each turn. A first turn that reads like a title ("Pinhead (Hellraiser)") names the
dialog's subject and is kept as a fallback. The weights are general defaults, not fitted to a
data set. Each text's mentions are cached and the model is built once per distinct history, so
a growing conversation re-reads only its newest turn.

Salience is not evidence: a capitalised word can be an adjective ("Indian nationalists"), a
word capitalised because it opens a sentence, or the first word of a longer term ("Sickle
cell"). :meth:`ConversationContext.credible` tells those apart from names that the history
really uses as names, so that a pronoun is only ever replaced by the latter.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from convrag.rewriting.anaphora import anaphors
from convrag.rewriting.mentions import GROUP_BASE, mentions
from convrag.text.entities import NameSpan
from convrag.text.lexicon import AUX, FEMALE, FRAME_WORDS, FUNCTION_WORDS, JOINERS, MALE, WH
from convrag.text.tokens import fold, is_capitalised, strip_possessive, tokenize

__all__ = [
    "ANSWER_CHARS",
    "PERSON_MIN",
    "ConversationContext",
    "Entity",
    "Referents",
    "Turn",
    "conversation_context",
    "display_name",
    "full_name",
]


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier exchange: the user's question and the assistant's answer (answer may be "")."""

    question: str
    answer: str
    standalone: str | None = None
    """The question as it was rewritten then ("What is the meal allowance in North
    America?" for "And in North America?"), when the service rewrote it."""
    titles: tuple[str, ...] = ()
    """The titles of the documents the answer cited."""


# Salience weights (general defaults, not fitted to a data set).
_QUESTION_WEIGHT = 2.0
_ANSWER_WEIGHT = 1.0
_DECAY = 0.6  # for what "it/that" points to: the topic moves fast
_SLOW_DECAY = 0.85  # for who "he/she" is: the main character of a conversation persists
_MAX_TURNS = 12  # the first turn and the latest ones; older turns add little but cost
ANSWER_CHARS = 400  # an answer's opening names its subject; the rest adds side entities
PERSON_MIN = 0.5  # below this much evidence, leave "he/she" alone rather than guess


@dataclass(slots=True)
class Entity:
    """A name seen in the history, with the evidence gathered about what it is."""

    display: str
    key: str
    tokens: frozenset[str]
    score: float = 0.0  # recency-weighted salience, for "it/that"
    person: float = 0.0  # evidence that it is the person "he/she" points to
    group: float = 0.0  # evidence that it is a group or plural thing ("they")
    thing: float = 0.0  # evidence that it is a thing or place ("it")
    article: bool = False
    female: float = 0.0
    male: float = 0.0
    forms: dict[str, int] = field(default_factory=dict)
    turns: set[int] = field(default_factory=set)
    evidenced: bool = False  # used as a name at least once, not only as a modifier
    title: bool = False  # the dialog's title-like first turn ("Burlesque"): its subject
    grouplike: bool = False  # plural, "the ...", or a group noun: something "they" can be


@dataclass(slots=True)
class Referents:
    """What each kind of reference in a follow-up most likely points to, as
    :func:`~convrag.rewriting.referents.referents` reads it from the salience model. It
    lives here, below the modules that fill it and those that read it (the topic's
    "his/their" determiners among them), so none of them imports another for it."""

    person: str | None
    female: str | None
    male: str | None
    people: list[str]  # coordinated names in the previous turn ("A and B")
    group: str | None
    topic: str | None  # what "it/that" most likely points to
    main: str | None = None  # what the whole conversation is about
    off: frozenset[str] = frozenset()  # pronoun kinds switched off (PRONOUN_RULES)


class ConversationContext:
    """Salience model over the history: who and what the conversation is about."""

    def __init__(self, history: Sequence[Turn]) -> None:
        self.entities: dict[str, Entity] = {}
        turns = list(enumerate(history))
        if len(turns) > _MAX_TURNS:
            turns = [turns[0], *turns[-(_MAX_TURNS - 1) :]]
        n = len(history)
        # Words the answers write in lowercase mid-sentence ("sickle cell disease"): the same
        # word capitalised elsewhere ("How is Sickle cell treated?") is not a name.
        self.common_words: frozenset[str] = frozenset().union(
            *(_lowercase_words(turn.answer[:ANSWER_CHARS]) for _, turn in turns)
        )
        for idx, turn in turns:
            age = n - 1 - idx
            q = turn.question.strip()
            if idx == 0 and _is_title_like(q):
                self._add_title(q)
                continue
            qtoks = tokenize(q)
            where = bool(qtoks) and qtoks[0].low == "where"
            self._add_text(q, idx, age, _QUESTION_WEIGHT, places=False, question=True)
            subj = self._add_text(
                turn.answer[:ANSWER_CHARS],
                idx,
                age,
                _ANSWER_WEIGHT,
                places=where,
                question=False,
            )
            # "Where did he grow up?" / "Malpas grew up in ...": the person the user calls
            # "he" is the person the answer is about.
            asked = {qtoks[k].low for k in anaphors(qtoks)} & (MALE | FEMALE)
            if subj is not None and asked and qtoks[0].low not in ("who", "whom"):
                slow = _QUESTION_WEIGHT * _SLOW_DECAY**age
                subj.person += slow
                if asked & FEMALE:
                    subj.female += slow
                if asked & MALE:
                    subj.male += slow
        self._lowercase_mentions(turns, n)
        self.ranked: list[Entity] = sorted(self._merged(), key=lambda e: -e.score)

    def _entity(self, text: str, key: str) -> Entity:
        ent = self.entities.get(key)
        if ent is None:
            ent = Entity(text, key, frozenset(key.split()))
            self.entities[key] = ent
        ent.forms[text] = ent.forms.get(text, 0) + 1
        return ent

    def _add_title(self, text: str) -> None:
        core = re.sub(r"\s*\(.*?\)\s*", " ", text).strip() or text
        ent = self._entity(core, fold(core))
        ent.score += 2.0
        # A name capitalises its content words; "Indian independence movement" is a topic.
        named = all(
            is_capitalised(t) or t.low in FUNCTION_WORDS or t.low in JOINERS
            for t in tokenize(core)
            if t.kind == "word"
        )
        ent.person += 3.0 if named else 0.3
        ent.thing += 2.0
        ent.group += 2.0
        ent.turns.add(0)
        ent.title = True
        ent.grouplike = True

    def _add_text(
        self, text: str, idx: int, age: int, role: float, *, places: bool, question: bool
    ) -> Entity | None:
        """Count the names in ``text``; return the first person-like sentence subject."""
        if not text:
            return None
        found, first_subject = mentions(text, places, question)
        fast = role * _DECAY**age
        slow = role * _SLOW_DECAY**age
        subject_entity = None
        for i, m in enumerate(found):
            ent = self._entity(m.text, m.key)
            ent.turns.add(idx)
            ent.article = ent.article or m.article
            ent.female += slow * m.female
            ent.male += slow * m.male
            ent.score += fast * (1.5 if m.subject else 1.0)
            ent.person += slow * m.personish
            ent.group += slow * m.groupish
            ent.thing += fast * (1.0 if m.personish < 0.5 else 0.3)
            ent.evidenced = ent.evidenced or m.named
            ent.grouplike = ent.grouplike or m.groupish > GROUP_BASE
            if i == first_subject:
                subject_entity = ent
        return subject_entity

    def _lowercase_mentions(self, turns: Sequence[tuple[int, Turn]], n: int) -> None:
        """Count names typed in lowercase ("when was faith hill born?") as mentions."""
        by_last: dict[str, Entity] = {}
        for ent in self.entities.values():
            if ent.person > 0.5 and self.credible(ent):
                by_last.setdefault(ent.key.split()[-1], ent)
        if not by_last:
            return
        for idx, turn in turns:
            toks = tokenize(turn.question)
            slow = _QUESTION_WEIGHT * _SLOW_DECAY ** (n - 1 - idx)
            for k, t in enumerate(toks):
                if t.kind != "word" or not t.text.islower():
                    continue
                found = by_last.get(fold(strip_possessive(t.text)))
                if found is None or t.low in FUNCTION_WORDS or t.low in FRAME_WORDS:
                    continue
                found.person += slow
                found.score += slow * 0.5
                found.turns.add(idx)
                p = toks[k - 1] if k > 0 else None
                if (
                    len(found.tokens) == 1
                    and p is not None
                    and p.kind == "word"
                    and p.text.islower()
                    and p.low not in FUNCTION_WORDS
                    and p.low not in FRAME_WORDS
                    and len(p.text) > 2
                ):
                    form = f"{p.text.capitalize()} {next(iter(found.forms))}"
                    found.forms[form] = found.forms.get(form, 0) + 1

    def _merged(self) -> list[Entity]:
        """Fold one-word mentions ("Dali") into the full name ("Salvador Dali")."""
        ents = sorted(self.entities.values(), key=lambda e: -len(e.tokens))
        merged: list[Entity] = []
        for ent in ents:
            host = None
            if len(ent.tokens) == 1:
                (tok,) = tuple(ent.tokens)
                # "Dali" -> "Salvador Dali", "Salvador" -> "Salvador Dali"; but "Disney" is
                # not "Disney Renaissance", so only person-like hosts absorb a first name.
                cands = [
                    m
                    for m in merged
                    if len(m.tokens) > 1
                    and (
                        tok == m.key.split()[-1] or (tok == m.key.split()[0] and m.person > m.thing)
                    )
                ]
                if cands:
                    host = max(cands, key=lambda m: m.person + m.score)
            if host is None:
                merged.append(ent)
                continue
            host.score += ent.score
            host.person += ent.person
            host.group += ent.group
            host.thing += ent.thing
            host.female += ent.female
            host.male += ent.male
            host.turns |= ent.turns
            host.evidenced = host.evidenced or ent.evidenced
            host.title = host.title or ent.title
            host.grouplike = host.grouplike or ent.grouplike
            for form, count in ent.forms.items():
                host.forms[form] = host.forms.get(form, 0) + count
        for ent in merged:
            bonus = 1.0 + 0.25 * (len(ent.turns) - 1)  # recurring across turns: a main subject
            ent.person *= bonus
            ent.group *= bonus
        return merged

    def credible(self, ent: Entity) -> bool:
        """Whether a pronoun may be replaced by ``ent``: the history uses it as a name.

        A name of several words is one, and so is the dialog's title. A one-word name needs
        a use that is not a modifier ("Indian nationalists", "Sickle cell") and must not be a
        word the answers write in lowercase ("sickle cell disease"); otherwise it is a
        capitalised common word, and a wrong referent hurts retrieval more than a pronoun left
        alone.
        """
        if len(ent.tokens) > 1 or ent.title:
            return True
        return ent.evidenced and not (ent.tokens & self.common_words)


def _lowercase_words(text: str) -> frozenset[str]:
    """The lowercase words of ``text`` that do not open a sentence (common words)."""
    return frozenset(
        t.low for t in tokenize(text) if t.kind == "word" and t.text.islower() and not t.sent_start
    )


def _is_title_like(q: str) -> bool:
    """A first "question" that is really a title ("Pinhead (Hellraiser)") names the topic."""
    if not q or q.endswith("?") or len(q.split()) > 8:
        return False
    toks = tokenize(q)
    if not toks or toks[0].low in WH or toks[0].low in AUX:
        return False
    caps = sum(1 for t in toks if is_capitalised(t))
    words = sum(1 for t in toks if t.kind == "word")
    return caps >= max(1, words // 2)


@lru_cache(maxsize=256)
def _context_cached(history: tuple[Turn, ...]) -> ConversationContext:
    return ConversationContext(history)


def conversation_context(history: Sequence[Turn]) -> ConversationContext:
    """The salience model of ``history``, built once per distinct history."""
    return _context_cached(tuple(history))


def display_name(ent: Entity) -> str:
    """The fullest short spelling of an entity ("Salvador Dali" over "Dali")."""
    forms = [kv for kv in ent.forms.items() if len(kv[0].split()) <= 4] or list(ent.forms.items())
    best = max(forms, key=lambda kv: (len(kv[0].split()), kv[1]))[0]
    if ent.article and len(ent.forms) >= 1 and not best.lower().startswith("the "):
        return f"the {best}"
    return best


def full_name(span: NameSpan, ctx: ConversationContext) -> str | None:
    """The fuller name the history uses for a one-word mention ("Dali" -> "Salvador Dali").

    A word after a possessive is the head of a name already ("America's Cup"), not a
    surname of someone else's ("Stanley Cup"), and a surname after initials is spelled out
    already ("p.g Wodehouse").
    """
    if (
        span.ntok != 1
        or span.acronym
        or span.prev.endswith(("'s", "’s", "s'"))
        # an initial before it: the tokens of "p.g" end in "g"
        or (len(span.prev) == 1 and span.prev.isalpha() and span.prev not in ("a", "i"))
    ):
        return None
    people = sorted(ctx.ranked, key=lambda e: -e.person)[:3]
    for ent in people:
        words = ent.key.split()
        if (
            len(words) > 1
            and ent.person > ent.thing
            # a surname alone is common; a first name alone needs he/she evidence
            and (span.key == words[-1] or (span.key == words[0] and (ent.male or ent.female)))
            and not set(words) & JOINERS
        ):
            return display_name(ent)
    return None
