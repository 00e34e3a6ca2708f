"""What the conversation so far is about, for reading a follow-up against it.

:class:`Turn` is one earlier exchange. :func:`anaphors` finds the pronouns of a message that
point outside it, leaving out dummy "it" ("is it possible to ...") and pronouns whose
antecedent is in the message itself. :class:`ConversationContext` is a salience model over the
history: every name the turns mention, with the evidence that it is the person "he/she" points
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
from typing import NamedTuple

from convrag.text.entities import NameSpan, name_spans
from convrag.text.lexicon import (
    ADVERBS,
    AUX,
    CLAUSE_LINKS,
    DETS,
    FEMALE,
    FRAME_WORDS,
    FUNCTION_WORDS,
    GROUP_HEADS,
    JOINERS,
    LOC_PREPS,
    MALE,
    NOT_NAME,
    ORG_HEADS,
    PAST_VERBS,
    PREPS,
    PRONOUNS,
    TIME_WORDS,
    TITLES,
    WH,
)
from convrag.text.tokens import (
    Token,
    fold,
    is_capitalised,
    is_plural_phrase,
    is_verb_like,
    join_tokens,
    strip_possessive,
    tokenize,
)

__all__ = [
    "ANSWER_CHARS",
    "PERSON_MIN",
    "ConversationContext",
    "Entity",
    "Turn",
    "anaphors",
    "conversation_context",
    "display_name",
    "full_name",
    "modifies_next",
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
_GROUP_BASE = 0.3  # any name might be what "they" means; plurals and groups more so
_WEAK_PERSON = 0.2  # "Indian nationalists", "Sickle cell": a modifier, hardly a person
# The shape of a nationality or language adjective ("Indian", "Korean", "Chinese", "British").
_ADJECTIVE_RE = re.compile(r"(?:an|ese|ish)$")
_BE = frozenset({"is", "are", "was", "were", "be", "been", "being", "am"})

# --------------------------------------------------------------------------------------------
# Pronouns that point outside the message
# --------------------------------------------------------------------------------------------

# "Going back to primary sources, can it be used ...": the pronoun points inside the message.
_TOPIC_INTRO_RE = re.compile(
    r"^(?:(?:and|so|ok(?:ay)?|now)[\s,]+)?(?:going\s+back\s+to|back\s+to|coming\s+back\s+to|"
    r"returning\s+to|speaking\s+(?:of|about)|talking\s+(?:about|of)|regarding|as\s+(?:for|to)|"
    r"concerning|with\s+regards?\s+to|when\s+it\s+comes\s+to|in\s+terms\s+of|"
    r"on\s+the\s+subject\s+of)"
    r"\s+[^,;:.?!]{2,}[,;:]",
    re.IGNORECASE,
)
_EXPLETIVE_IT_RE = re.compile(
    r"(?:\bit\s+(?:is|was|'s|’s|will\s+be|would\s+be)|\b(?:is|was|isn't|wasn't|would|will)\s+it"
    r"(?:\s+be)?)\s+(?:\w+\s+)?(?:possible|true|necessary|important|better|best|worth|likely|"
    r"unlikely|hard|easy|difficult|ok|okay|safe|normal|common|required|allowed|legal|illegal|"
    r"wise|advisable|bad|good|fine|time|too\s+late)\b"
    r"|\bmake\s+it\s+(?:big|happen|work|through|to)\b"
    r"|\b(?:does|did|will|would)\s+it\s+take\b|\bit\s+takes?\b|\bit\s+seems\b"
    r"|\bit\s+(?:is|was)\s+said\b|\bwhat\s+is\s+it\s+like\b|\bhow\s+is\s+it\s+going\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=4096)
def anaphors(toks: tuple[Token, ...]) -> tuple[int, ...]:
    """Indices of pronouns that point outside the message.

    A pronoun counts only when no proper noun precedes it in the message ("Did Dali ... his
    parents" is self-contained), and "it"/"that"/"there" only in their referring uses
    ("is it true that", "is there", "the one that" are not anaphora).
    """
    out: list[int] = []
    n = len(toks)
    seen_name = False
    names = name_spans(toks)
    name_starts = {s.first for s in names}
    intro_end = -1
    if _TOPIC_INTRO_RE.match(join_tokens(toks)):
        intro_end = next((k for k, t in enumerate(toks) if t.text in ",;:"), -1)
    stated = 0  # content words in earlier sentences of the message
    sentence_content = 0
    for k, t in enumerate(toks):
        if k in name_starts or k == intro_end:
            seen_name = True
        if t.sent_start and k > 0:
            stated += sentence_content
            sentence_content = 0
        if t.kind != "word":
            continue
        if t.low not in FUNCTION_WORDS and t.low not in FRAME_WORDS:
            sentence_content += 1
        if stated >= 2 and t.low in ("it", "its", "this", "that", "these", "those"):
            continue  # "Guinea pigs are eaten. Is that true?": the antecedent is right there
        low = t.low
        prev = toks[k - 1].low if k > 0 else ""
        nxt = toks[k + 1].low if k + 1 < n else ""
        if low in ("he", "she", "him", "his", "her", "hers", "they", "them", "their", "theirs"):
            if low == "their" and _bound_possessive(toks, k):
                continue
            if not seen_name:
                out.append(k)
        elif low in ("it", "its"):
            if low == "its" and _bound_possessive(toks, k):
                continue
            if _earlier_clause_np(toks, k):
                continue  # "I updated my card, but it shows errors": "it" is my card
            if not seen_name and not _expletive_it(toks, k):
                out.append(k)
        elif low in ("this", "these", "those"):
            if nxt in (
                "week",
                "year",
                "month",
                "morning",
                "evening",
                "afternoon",
                "weekend",
                "season",
                "summer",
                "winter",
                "spring",
                "autumn",
                "fall",
                "century",
            ):
                continue
            if not seen_name or nxt in ("?", ".", "!", "") or nxt in AUX:
                out.append(k)
        elif low == "that":
            if prev == "so" or nxt in PRONOUNS - {"that", "this", "it"}:
                continue  # "so that", "that he ..." (complementiser)
            if (
                nxt in ("?", ".", "!", ",", "")
                or prev in PREPS
                or prev in AUX
                or prev in ("do", "does", "did", "explain", "elaborate", "mean", "repeat", "")
                or k == 0
                or (toks[k - 1].sent_start and toks[k - 1].kind == "punct")
                or (nxt not in FUNCTION_WORDS and prev in PREPS | AUX | {""})
            ):
                out.append(k)
        elif low == "there":
            if nxt in AUX or prev in AUX or nxt in ("'s", "’s"):
                continue  # "is there", "there are"
            if prev in PREPS or nxt in ("?", ".", "!", ",", "") or prev not in FUNCTION_WORDS:
                out.append(k)
    return tuple(out)


def _bound_possessive(toks: tuple[Token, ...], k: int) -> bool:
    """ "Did burlesque stay true to its roots?": "its" is bound by the question's own subject.

    True when the question opens with an auxiliary or wh-word plus auxiliary followed by a
    common-noun subject whose number matches ("its" singular, "their" plural).
    """
    j = 0
    if j < k and toks[j].low in WH:
        j += 1
    if j >= k or toks[j].low not in AUX:
        return False
    j += 1
    if j < k and toks[j].low in ("the", "a", "an", "this", "that", "these", "those", "all"):
        j += 1
    words: list[Token] = []
    while j < k and toks[j].kind == "word" and toks[j].low not in FUNCTION_WORDS:
        words.append(toks[j])
        j += 1
    if not words or is_verb_like(words[-1]) or words[-1].low in FRAME_WORDS:
        return False
    plural = is_plural_phrase(words[-1].low)
    return plural if toks[k].low == "their" else not plural


def _earlier_clause_np(toks: tuple[Token, ...], k: int) -> bool:
    """Whether an earlier clause of the message has a noun phrase that token ``k`` can point to.

    "I updated my credit card, but it keeps failing": a possessive or definite noun phrase
    followed by a clause break (comma or linking word) before the pronoun.
    """
    seen_np = False
    for j in range(k):
        t = toks[j]
        if t.low in ("my", "your", "our", "the") and j + 1 < k and toks[j + 1].kind == "word":
            nxt = toks[j + 1]
            seen_np = seen_np or (nxt.low not in FUNCTION_WORDS and nxt.low not in FRAME_WORDS)
        elif seen_np and (t.text == "," or t.low in CLAUSE_LINKS):
            return True
    return False


def _expletive_it(toks: tuple[Token, ...], k: int) -> bool:
    """True for a dummy "it" ("is it possible to", "make it big"), not a referring one."""
    before = [t.low for t in toks[max(0, k - 2) : k]]
    window = " ".join([*before, *(t.low for t in toks[k : k + 5])])
    at = sum(len(w) + 1 for w in before)  # where this "it" starts in the window
    return any(m.start() <= at < m.end() for m in _EXPLETIVE_IT_RE.finditer(window))


# --------------------------------------------------------------------------------------------
# Salience model: who and what the conversation is about
# --------------------------------------------------------------------------------------------


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


class _Mention(NamedTuple):
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
def _mentions(text: str, places: bool, question: bool) -> tuple[tuple[_Mention, ...], int]:
    """The name occurrences of ``text`` and the index of the first person-like subject.

    Cached per text so that a growing conversation re-reads only its newest turn. ``places``
    marks the answer to a "where" question (its non-subject names are places); ``question``
    marks user text, whose capitalised first word is often not a name.
    """
    toks = tokenize(text)
    spans = name_spans(toks)
    out: list[_Mention] = []
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
        lastw = span.key.split()[-1]
        before = span.first - (2 if span.article else 1)
        possessive = toks[span.last].text.endswith(("'s", "’s"))
        quoted = before >= 0 and toks[before].text in "\"“'‘"
        loc = not possessive and (
            span.prev in LOC_PREPS
            or (places and not subject)
            # "Ridgeland, Mississippi": a name right after a place is a place
            or (before >= 0 and toks[before].text == "," and before - 1 == prev_loc_end)
        )
        if loc:
            prev_loc_end = span.last
        personish = 2.0 if subject else 1.0
        if loc:
            personish *= 0.1
        if span.article or span.joined or (span.ntok > 1 and lastw in ORG_HEADS):
            personish *= 0.1
        if all(w in TITLES for w in span.key.split()):
            personish *= 0.1  # "Deputy Prime Minister" is a role, not a referent
        if question and span.first >= 1 and toks[span.first - 1].low in AUX:
            personish *= 2.0  # "When did Kadyrov become ...": the question's subject
        if span.acronym or quoted:
            personish *= 0.2
        if possessive:
            personish *= 1.5
        if span.ntok > 3:
            personish *= 0.3
        if span.ntok >= 2 and personish >= 1.0:
            personish *= 1.2
        if span.ntok == 1 and not subject and toks[span.first].sent_start and question:
            personish *= 0.2  # "Notable people she ...?": capitalised by position
        modifier = modifies_next(toks, span)
        if modifier:
            personish *= _WEAK_PERSON
        # "Dynamic secrets expire": one word that opens a sentence is capitalised anyway,
        # unless it is the subject of a verb ("Dali grew up").
        positional = span.ntok == 1 and toks[span.first].sent_start and not subject
        named = not modifier and (not positional or possessive)
        female = male = False
        if subject:
            after = {toks[k].low for k in range(span.last + 1, sent[1])}
            if sent[1] < len(toks):
                after.add(toks[sent[1]].low)  # "Hill was born ... . She ..."
            female = bool(after & FEMALE)
            male = bool(after & MALE)
            if personish >= 1.0 and first_subject < 0:
                first_subject = len(out)
        groupish = _GROUP_BASE + (1.0 if span.plural else 0.0) + (0.5 if span.article else 0.0)
        if lastw in GROUP_HEADS:
            groupish += 1.0
        out.append(
            _Mention(
                span.text,
                span.key,
                span.article,
                subject,
                personish,
                groupish,
                female,
                male,
                named,
            )
        )
    return tuple(out), first_subject


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
        mentions, first_subject = _mentions(text, places, question)
        fast = role * _DECAY**age
        slow = role * _SLOW_DECAY**age
        subject_entity = None
        for i, m in enumerate(mentions):
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
            ent.grouplike = ent.grouplike or m.groupish > _GROUP_BASE
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
