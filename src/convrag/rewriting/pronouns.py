"""Pronoun resolution by kind: "he/she", "they/their", "it/this/that", "there".

:func:`resolve_pronouns` replaces the first anaphoric pronoun of each kind (found by
:func:`~convrag.rewriting.anaphora.anaphors`) with its referent in
:class:`~convrag.rewriting.history.Referents`. Each kind is a named resolver in
:data:`_RESOLVERS`, switched off as a rule of
:data:`~convrag.rewriting.resolve.PRONOUN_RULES`. A pronoun whose referent the message
already names, or that has none credible, is left as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from convrag.rewriting.anaphora import anaphors
from convrag.rewriting.classify import is_no_retrieval
from convrag.rewriting.history import Referents, Turn
from convrag.rewriting.people import join_names, possessive
from convrag.text.lexicon import FEMALE, FUNCTION_WORDS, TEMPORAL_PREPS
from convrag.text.tokens import Token, clean, fold, is_plural_phrase, tokenize


def _np_after(toks: tuple[Token, ...], k: int) -> int:
    """Index one past the noun phrase that starts at ``k`` (content words only)."""
    j = k
    while j < len(toks) and toks[j].kind in ("word", "num") and toks[j].low not in FUNCTION_WORDS:
        j += 1
    return j


def _in_question(toks: tuple[Token, ...], k: int) -> bool:
    """Whether token ``k`` is in a sentence that ends with a question mark."""
    for t in toks[k:]:
        if t.text in ".!?":
            return t.text == "?"
    return True


def _her_is_object(toks: tuple[Token, ...], k: int) -> bool:
    """ "told her" (object) versus "her salary" (possessive)."""
    if k + 1 >= len(toks):
        return True
    nxt = toks[k + 1]
    return nxt.kind == "punct" or nxt.low in FUNCTION_WORDS


_KIND = {
    **dict.fromkeys(("he", "him", "his", "she", "her", "hers"), "person"),
    **dict.fromkeys(("they", "them", "their", "theirs"), "group"),
    **dict.fromkeys(("it", "its", "this", "that", "these", "those"), "topic"),
}
"""Each pronoun's kind in :data:`~convrag.rewriting.resolve.PRONOUN_RULES`."""


@dataclass(slots=True)
class _Pass:
    """One pass over a message's pronouns: what the resolvers read, and what they did."""

    msg: str
    toks: tuple[Token, ...]
    refs: Referents
    low_msg: str  # the message folded, to see whether it names a referent already
    used: set[str] = field(default_factory=set)  # the kinds replaced so far
    replaced: list[str] = field(default_factory=list)  # what was put in, in order


class _Replacement(NamedTuple):
    """What a pronoun becomes, and the last token it replaces (the noun after "their"
    when the whole phrase is rewritten: "their salary" -> "the salary of A and B")."""

    text: str
    last: int


def resolve_pronouns(msg: str, refs: Referents) -> tuple[str, bool]:
    """Replace the first anaphoric pronoun of each kind with its referent."""
    toks = tokenize(msg)
    pointing = anaphors(toks)
    if not pointing:
        return msg, False
    p = _Pass(msg, toks, refs, fold(msg))
    out: list[str] = []
    pos = 0
    skip_until = -1
    for k in pointing:
        kind = _KIND.get(toks[k].low)
        if k < skip_until or kind is None or kind in refs.off:
            continue
        found = _RESOLVERS[kind](p, k)
        if found is None:
            continue
        p.used.add(kind)
        text = _fitted(found.text, toks, k)
        out.append(msg[pos : toks[k].start])
        out.append(text)
        p.replaced.append(text)
        pos = toks[found.last].end
        skip_until = found.last + 1
    out.append(msg[pos:])
    return "".join(out), bool(p.replaced)


def _fitted(repl: str, toks: tuple[Token, ...], k: int) -> str:
    """The replacement for token ``k`` as it reads in place: less a last word the message
    says next, and capitalised when it opens the message."""
    after = next((x for x in toks[k + 1 :] if x.kind == "word"), None)
    words = repl.split()
    if after is not None and len(words) > 1 and fold(words[-1]) == after.low:
        repl = " ".join(words[:-1])  # "When is the office open?" + "is it open ...?"
    if toks[k].sent_start and repl[:1].islower() and k == 0:
        repl = repl[0].upper() + repl[1:]
    return repl


def _person(p: _Pass, k: int) -> _Replacement | None:
    """ "he/she/his/her": the person of that gender, else the most salient one; "his" and
    a possessive "her" take the name's possessive."""
    low = p.toks[k].low
    name = (p.refs.female if low in FEMALE else p.refs.male) or p.refs.person
    if not name or "person" in p.used or fold(name) in p.low_msg:
        return None
    is_object = low == "her" and _her_is_object(p.toks, k)
    return _Replacement(name if low in ("he", "she", "him") or is_object else possessive(name), k)


def _group(p: _Pass, k: int) -> _Replacement | None:
    """ "they/their": the people the last exchange listed, else the group it was about;
    none when the message names its own ("Are those sports played by women too, can
    they play them?")."""
    if "group" in p.used or _own_antecedent(p.toks, k):
        return None
    if p.refs.people:
        return _listed(p, k)
    group = p.refs.group
    if not group or fold(group) in p.low_msg:
        return None
    return _Replacement(possessive(group) if p.toks[k].low in ("their", "theirs") else group, k)


def _own_antecedent(toks: tuple[Token, ...], k: int) -> bool:
    """Whether "these/those" and a noun come before token ``k``: a plural the message
    itself names, which its "they/them" points back to."""
    return any(_determines(toks, j, ("these", "those")) for j in range(k - 1))


def _determines(toks: tuple[Token, ...], j: int, demonstratives: tuple[str, ...]) -> bool:
    """Whether token ``j`` is one of ``demonstratives`` before the noun it determines
    ("this policy", "those sports"), not a pronoun of its own."""
    return (
        toks[j].low in demonstratives
        and j + 1 < len(toks)
        and toks[j + 1].kind == "word"
        and toks[j + 1].low not in FUNCTION_WORDS
    )


def _listed(p: _Pass, k: int) -> _Replacement:
    """ "they" for the people just listed ("A and B"); "their salary" becomes "the salary
    of A and B", a bare "their" "A and B's"."""
    names = join_names(p.refs.people)
    if p.toks[k].low not in ("their", "theirs") or k + 1 >= len(p.toks):
        return _Replacement(names, k)
    j = _np_after(p.toks, k + 1)
    if j == k + 1:
        return _Replacement(f"{names}'s", k)
    noun = p.msg[p.toks[k + 1].start : p.toks[j - 1].end]
    return _Replacement(f"the {noun} of {names}", j - 1)


def _topic(p: _Pass, k: int) -> _Replacement | None:
    """ "it/its/this/that": the previous turn's topic, unless the pronoun is a determiner
    ("this policy"), follows a temporal preposition ("after that"), comments on the answer
    ("That really surprised me."), or the topic is plural or already said."""
    toks = p.toks
    t = toks[k]
    low = t.low
    is_det = _determines(toks, k, ("this", "that", "these", "those"))
    temporal = k > 0 and toks[k - 1].low in TEMPORAL_PREPS  # "after that"
    if "topic" in p.used or is_det or temporal:
        return None
    if low in ("this", "that") and t.sent_start and not _in_question(toks, k):
        return None  # "That really surprised me.": a comment on the answer
    topic = p.refs.topic
    if not topic or (low in ("it", "its", "this", "that") and is_plural_phrase(topic)):
        return None  # "How is it created?" cannot point to "the dialog nodes"
    if fold(topic) in p.low_msg or any(fold(topic) in fold(r) for r in p.replaced):
        return None
    return _Replacement(possessive(topic) if low == "its" else topic, k)


_RESOLVERS: dict[str, Callable[[_Pass, int], _Replacement | None]] = {
    "person": _person,
    "group": _group,
    "topic": _topic,
}
"""Each kind of :data:`_KIND`'s resolver: the referent for the pronoun at an index, or None
when there is none credible (or the kind was replaced already)."""


def previous_question(history: Sequence[Turn], refs: Referents) -> str | None:
    """The latest real question, its own pronouns resolved against the history."""
    for turn in reversed(history):
        q = clean(turn.standalone or turn.question)
        if q and not is_no_retrieval(clean(turn.question)):
            resolved, _ = resolve_pronouns(q, refs)
            return resolved
    return None
