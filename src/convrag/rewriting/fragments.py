"""The fragment rules: a follow-up that is no whole question, completed from the last one.

Each rule takes an :class:`Ask` (the message, the history, its referents, the previous
question and the message with its pronouns resolved) and returns the rewrite, or None when
it does not apply; :data:`~convrag.rewriting.resolve._RULES` tries them in order.
``lead_fragment`` completes "and in 2010?" (putting X into the previous question's frame),
``compare`` names the people "Who earns more?" compares, and ``expand_name`` spells a
one-word name out as the history does; ``code_term`` (:func:`swap_code_term`) is the
technical-term swap inside "and X?". "What about X?" has no rule of its own: its pronouns
are resolved and the learned expansion carries the previous question's words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from convrag.rewriting.classify import COMPARATIVE_RE, LEAD_CONJ_RE
from convrag.rewriting.history import (
    Referents,
    Turn,
    conversation_context,
    full_name,
)
from convrag.rewriting.people import compared_people, join_names
from convrag.rewriting.pronouns import resolve_pronouns
from convrag.text.entities import YEAR_RE, NameSpan, name_spans
from convrag.text.lexicon import (
    AUX,
    FRAME_WORDS,
    FUNCTION_WORDS,
    PREPS,
    TIME_NOUNS,
    TIME_WORDS,
    WH,
)
from convrag.text.tokens import (
    Token,
    content_words,
    fold,
    is_verb_like,
    strip_end,
    strip_possessive,
    tokenize,
)


@dataclass(frozen=True, slots=True)
class Ask:
    """One follow-up as every rule sees it: the message, the history, the referents, the
    previous question, and the message with its pronouns resolved."""

    msg: str
    history: Sequence[Turn]
    refs: Referents
    prev_q: str | None
    resolved: str
    changed: bool


def rule_lead_fragment(a: Ask) -> str | None:
    """ "and in 2010?": a fragment after a conjunction completes the previous question."""
    lead = LEAD_CONJ_RE.match(a.msg)
    if not lead or not a.prev_q:
        return None
    rest = a.msg[lead.end() :]
    rtoks = tokenize(rest)
    is_fragment = (
        bool(rtoks)
        and (rtoks[0].low in PREPS or len(content_words(rtoks)) <= 2)
        and not any(t.low in AUX for t in rtoks)
    ) or ("code_term" not in a.refs.off and _code_shape(strip_end(rest).strip()) is not None)
    if not is_fragment:
        return None
    rest, _ = resolve_pronouns(rest, a.refs)
    rtoks = tokenize(rest)
    mapped = _into_previous_frame(rest, a.prev_q, a.refs)
    if mapped:
        return mapped
    if rtoks[0].low in PREPS and not _proper_names(rtoks):
        # "and in 2010?" extends the question; "and sick leave?" would not read
        # onto "Do unused days carry over?": that one carries the question instead.
        swapped = _swap_last_phrase(a.prev_q, rest)
        return swapped or f"{strip_end(a.prev_q)} {strip_end(rest)}?"
    return None


def rule_compare(a: Ask) -> str | None:
    """ "Who earns more?": the people compared named ("... between A and B?")."""
    if not COMPARATIVE_RE.search(a.msg):
        return None
    people = compared_people(a.history, conversation_context(a.history))
    toks = tokenize(a.resolved)
    if (
        len(people) >= 2
        and toks
        and toks[0].low in ("who", "whose")
        and len(content_words(toks)) <= 2
        and not any(fold(p) in fold(a.resolved) for p in people)
    ):
        return _append_topic(a.resolved, join_names(people), "between")
    return None


def rule_expand_name(a: Ask) -> str | None:
    """A one-word name spelled out as the history spells it ("Dali" -> "Salvador Dali")."""
    if a.changed:
        return None
    expanded = _expand_partial(a.resolved, name_spans(tokenize(a.resolved)), a.history)
    return expanded if expanded != a.resolved else None


def _into_previous_frame(rest: str, prev_q: str | None, refs: Referents) -> str | None:
    """Map the X of "and X?" onto the previous question's frame when the mapping is clear:
    a technical term for a term, else the first of :data:`_MAPPINGS` that applies."""
    x = strip_end(rest)
    if not prev_q or not x:
        return None
    prev = strip_end(prev_q)
    ptoks = tokenize(prev)
    xtoks = tokenize(x)
    if not ptoks or ptoks[0].low not in WH | AUX:
        return None
    swapped = None if "code_term" in refs.off else swap_code_term(prev, x)
    if swapped:
        return swapped
    for mapping in _MAPPINGS:
        mapped = mapping(prev, ptoks, x, xtoks)
        if mapped is not None:
            return mapped
    return None


def _year_for_year(
    prev: str, ptoks: tuple[Token, ...], x: str, xtoks: tuple[Token, ...]
) -> str | None:
    """A year for a year: "and in 2019?" / "what about 2019?"."""
    xyear = YEAR_RE.search(x)
    pyear = YEAR_RE.search(prev)
    if xyear and pyear and len(content_words(xtoks)) <= 2:
        return f"{prev[: pyear.start()]}{xyear.group()}{prev[pyear.end() :]}?"
    return None


def _name_for_name(
    prev: str, ptoks: tuple[Token, ...], x: str, xtoks: tuple[Token, ...]
) -> str | None:
    """A name for a name: "What is the capital of France?" + "what about Germany?"."""
    xnames = _proper_names(xtoks)
    pnames = name_spans(ptoks)
    if not (xnames and pnames and len(xnames[0].text.split()) >= len(content_words(xtoks))):
        return None
    p = pnames[-1]
    if xnames[0].article and not p.article:
        return None  # "the South" is no name for what "Sun Ra" names
    a = ptoks[p.first].start
    b = ptoks[p.last].start + len(strip_possessive(ptoks[p.last].text))
    return f"{prev[:a]}{xnames[0].text}{prev[b:]}?"


def _same_head(prev: str, ptoks: tuple[Token, ...], x: str, xtoks: tuple[Token, ...]) -> str | None:
    """The same head noun: "What is Prasad's salary?" + "her basic salary" -> the
    previous question's last phrase with that head swapped for X."""
    content = content_words(xtoks)
    if not content:
        return None
    head = content[-1].low
    for k in range(len(ptoks) - 1, 0, -1):
        if ptoks[k].low == head:
            s = k
            while s - 1 >= 1 and (
                (ptoks[s - 1].kind == "word" and ptoks[s - 1].low not in FUNCTION_WORDS)
                or ptoks[s - 1].low in ("the", "a", "an")
            ):
                s -= 1
            if s <= 1:
                return None
            if xtoks[0].low in PREPS and ptoks[s - 1].low in PREPS:
                s -= 1  # "and for sorted maps?" brings its own preposition
            return f"{prev[: ptoks[s].start]}{x}{prev[ptoks[k].end :]}?"
    return None


def _new_phrase(
    prev: str, ptoks: tuple[Token, ...], x: str, xtoks: tuple[Token, ...]
) -> str | None:
    """A new noun phrase for a "what is ..." question: "How old is Obama?" + "his wife"."""
    if (
        ptoks[0].low not in WH - {"why"}  # "Why is X ...?" goes on past its subject
        or xtoks[0].low in PREPS
        or any(map(is_verb_like, xtoks))
    ):
        return None
    for k in range(1, min(4, len(ptoks))):
        if ptoks[k].low in ("is", "are", "was", "were"):
            if all(t.low in WH or t.low in FRAME_WORDS for t in ptoks[1:k]):
                return f"{prev[: ptoks[k].end]} {x}?"
            return None
    return None


_MAPPINGS: tuple[Callable[[str, tuple[Token, ...], str, tuple[Token, ...]], str | None], ...] = (
    _year_for_year,
    _name_for_name,
    _same_head,
    _new_phrase,
)
"""How X of "and X?" goes into the previous question (``prev``, its tokens, X, its
tokens), tried in order; each returns the new question, or None when it does not apply."""


_CODE_SHAPES = (
    ("option", re.compile(r"-{1,2}[A-Za-z][\w-]*")),
    (
        "identifier",
        re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?|\w*_\w+|[a-z]+[A-Z]\w*(?:\(\))?"),
    ),
)
"""Kinds of technical term, as written: a command-line option ("--posix", "-v") and a
name in code ("db.collection.name", "XXH_NO_LONG_LONG", "getSplitTime")."""


def _code_shape(word: str) -> str | None:
    """The kind of technical term ``word`` is (:data:`_CODE_SHAPES`), or None."""
    return next((kind for kind, rx in _CODE_SHAPES if rx.fullmatch(word)), None)


def swap_code_term(prev: str, x: str) -> str | None:
    """ "What does db.namespace hold?" + "and db.collection.name?": a lone technical term
    takes the place of the previous question's last term of the same kind."""
    shape = _code_shape(x)
    if shape is None:
        return None
    words = prev.split(" ")
    for k in range(len(words) - 1, 0, -1):
        term = words[k].rstrip(",;:")
        if _code_shape(strip_possessive(term)) == shape and term != x:
            words[k] = x + words[k][len(strip_possessive(term)) :]
            return " ".join(words) + "?"
    return None


def _proper_names(toks: tuple[Token, ...]) -> list[NameSpan]:
    """The capitalised names of ``toks`` less days, months and seasons ("on Sundays"),
    which are times, not names to swap for the previous question's."""
    return [s for s in name_spans(toks) if s.key not in TIME_WORDS]


def _swap_last_phrase(prev_q: str, fragment: str) -> str | None:
    """The previous question with its closing prepositional phrase replaced by
    ``fragment`` (a phrase of its own) when the two say the same kind of thing: the same
    preposition before a common noun phrase ("... allowance for a director?" + "and for
    a sales representative?"), or two times ("... hours on Saturday?" + "and during the
    week?"). None otherwise: "in Europe" and "in 2019" are not alternatives, and the
    fragment then extends the question."""
    prev = strip_end(prev_q)
    ptoks, ftoks = tokenize(prev), tokenize(strip_end(fragment))
    k = next((i for i in range(len(ptoks) - 1, 1, -1) if ptoks[i].low in PREPS), None)
    if k is None or len(ftoks) < 2 or not ptoks or ptoks[0].low not in WH | AUX:
        return None
    old, new = ptoks[k + 1 :], ftoks[1:]
    if not old or any(is_verb_like(t) or t.low in PREPS for t in (*old, *new)):
        return None

    def common(toks: tuple[Token, ...]) -> bool:
        return not name_spans(toks) and not any(t.kind == "num" for t in toks)

    def timed(toks: tuple[Token, ...]) -> bool:
        return any(t.low in TIME_NOUNS for t in toks)

    same_kind = (ptoks[k].low == ftoks[0].low and common(old) and common(new)) or (
        timed(old) and timed(new)
    )
    if not same_kind:
        return None
    return f"{prev[: ptoks[k].start]}{strip_end(fragment)}?"


def _append_topic(msg: str, topic: str, connector: str) -> str:
    """Append ``topic`` to a message, before its final punctuation ("... about BM25?")."""
    body = strip_end(msg)
    end = msg[len(body) :].strip()
    if body.lower().endswith((" about", " on", " of", " for", " with")):
        return f"{body} {topic}{end}"
    return f"{body} {connector} {topic}{end}"


def _expand_partial(msg: str, names: Sequence[NameSpan], history: Sequence[Turn]) -> str:
    """Spell out a one-word name ("Dali") as the fuller form the history uses."""
    ctx = conversation_context(history)
    toks = tokenize(msg)
    for span in names:
        full = full_name(span, ctx)
        if full is None:
            continue
        if full.lower().startswith("the ") and span.article:
            full = full[4:]
        t = toks[span.first]
        word_end = t.start + len(strip_possessive(t.text))
        return f"{msg[: t.start]}{full}{msg[word_end:]}"
    return msg
