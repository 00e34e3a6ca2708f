"""Entity extraction: the names, acronyms, amounts, years and quoted terms of a text.

:func:`extract_entities` serves synthesis, the repetition check, the server and the evaluation,
none of which should depend on query rewriting to get it; :func:`name_spans`, the proper-noun
finder underneath, is also what rewriting reads names with. Regex and word-list heuristics
only, favouring precision and speed: a call takes well under a millisecond.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from convrag.text.lexicon import (
    ADVERBS,
    FUNCTION_WORDS,
    JOINERS,
    NAME_PREFIXES,
    NOT_NAME,
    PRONOUNS,
    TIME_WORDS,
    UNITS,
)
from convrag.text.tokens import (
    Token,
    fold,
    has_inner_cap,
    is_acronym,
    is_capitalised,
    is_verb_like,
    strip_possessive,
    tokenize,
)

__all__ = ["YEAR_RE", "NameSpan", "extract_entities", "name_spans"]

_QUOTED_RE = re.compile(r"[\"“]([^\"“”\n]{2,60})[\"”]")
# Years 1500-2099, optionally as a decade ("1990s").
YEAR_RE = re.compile(r"\b(1[5-9]\d\d|20\d\d)s?\b")


class NameSpan(NamedTuple):
    """A proper-noun span found in a text, with what its surroundings say about it."""

    text: str  # as written, without a trailing "'s"
    key: str  # lowercased and accent-folded, to match other spellings
    ntok: int  # number of words
    first: int  # token index of the first word
    last: int  # token index of the last word
    article: bool  # preceded by "the"
    prev: str  # lowercased word before the span (after any article)
    acronym: bool  # a single all-capitals word
    joined: bool  # contains "of", "for", "&"...
    plural: bool  # the last word looks plural


@lru_cache(maxsize=4096)
def name_spans(toks: tuple[Token, ...]) -> tuple[NameSpan, ...]:
    """Find runs of capitalised words (allowing "of", "van der", initials) that look like names."""
    spans: list[NameSpan] = []
    n = len(toks)
    i = 0
    while i < n:
        if not _opens_name(toks, i):
            i += 1
            continue
        t = toks[i]
        last, joined = _name_end(toks, i)
        if t.low in JOINERS and last == i:
            i += 1
            continue
        first = i + 1 if t.low == "the" and last > i else i  # mid-sentence "The Little Mermaid"
        if not (first == last and _common_opener(toks, i, last)):
            spans.append(_span(toks, first, last, joined))
        i = last + 1
    return tuple(spans)


def _opens_name(toks: tuple[Token, ...], i: int) -> bool:
    """Whether token ``i`` can start a name: capitalised (or "iPhone"-like), and neither
    "I", a pronoun, a function word nor a common word that opens the sentence ("What",
    "New" only in "New York")."""
    t = toks[i]
    is_start = is_capitalised(t) or (t.kind == "word" and has_inner_cap(t.text))
    if not is_start or t.text == "I":
        return False
    if (
        t.sent_start
        and t.low in NOT_NAME
        and not is_acronym(t.text)
        # "New York", "San Diego": a name that starts with a common word
        and not (t.low in NAME_PREFIXES and i + 1 < len(toks) and is_capitalised(toks[i + 1]))
    ):
        return False
    return not (
        t.low in PRONOUNS
        or (t.low in FUNCTION_WORDS and t.low not in JOINERS and not is_acronym(t.text))
    )


def _name_end(toks: tuple[Token, ...], i: int) -> tuple[int, bool]:
    """The index of the last word of the name that starts at ``i``, and whether a joiner
    ("of", "van der", "&") is inside it."""
    n = len(toks)
    last = i
    j = i + 1
    joined = False
    while j < n:
        u = toks[j]
        if toks[j - 1].text.endswith(("'s", "’s")) and j - 1 >= i:
            break  # "Chaudhari's salary": the possessive ends the name
        if is_capitalised(u) and u.low not in PRONOUNS and u.text != "I":
            last = j
            j += 1
        elif _joins(toks, i, j, last):
            joined = True
            j += 1
        else:
            break
    return last, joined


def _joins(toks: tuple[Token, ...], i: int, j: int, last: int) -> bool:
    """Whether token ``j`` joins two parts of the name that starts at ``i`` ("Battle of
    Gettysburg", "Bank of the West"), but not an acronym to a name ("CEO of Netflix")."""
    u = toks[j]
    n = len(toks)
    return (
        u.kind == "word"
        and u.low in JOINERS
        and j + 1 < n
        and not (last == i and is_acronym(toks[i].text))  # "CEO of Netflix": two names
        and (
            is_capitalised(toks[j + 1])
            or (toks[j + 1].low == "the" and j + 2 < n and is_capitalised(toks[j + 2]))
        )
    )


def _common_opener(toks: tuple[Token, ...], i: int, last: int) -> bool:
    """Whether a one-word name at ``i`` is only a common word capitalised because it opens
    the sentence: a time word, an "-ing" word, or the first word of a lowercase term."""
    t = toks[i]
    if not t.sent_start or is_acronym(t.text):
        return False
    nxt = toks[last + 1] if last + 1 < len(toks) else None
    return (
        t.low in TIME_WORDS
        or t.low.endswith("ing")
        # "Sickle cell disease is ...": a capitalised common noun, not a name.
        or (
            nxt is not None
            and nxt.kind == "word"
            and nxt.text[0].islower()
            and nxt.low not in FUNCTION_WORDS
            and nxt.low not in ADVERBS
            and not is_verb_like(nxt)
            and not nxt.low.endswith("s")
        )
    )


def _span(toks: tuple[Token, ...], first: int, last: int, joined: bool) -> NameSpan:
    """The name of tokens ``first`` to ``last``, with what its surroundings say about it."""
    words = [toks[k].text for k in range(first, last + 1)]
    words[-1] = strip_possessive(words[-1])
    text = " ".join(words)
    before = first - 1
    article = before >= 0 and toks[before].low == "the"
    if article:
        before -= 1
    lastw = fold(words[-1])
    return NameSpan(
        text=text,
        key=fold(text),
        ntok=len(words),
        first=first,
        last=last,
        article=article,
        prev=toks[before].low if before >= 0 else "",
        acronym=len(words) == 1 and is_acronym(words[0]),
        joined=joined,
        plural=lastw.endswith("s") and not lastw.endswith(("ss", "us", "is")),
    )


def _amounts(toks: tuple[Token, ...]) -> list[str]:
    """Numbers with a currency sign, a percent sign or a unit word, and years."""
    out: list[str] = []
    for k, t in enumerate(toks):
        if t.kind != "num":
            continue
        text = t.text
        if text[0] in "$€£¥" or text.endswith("%"):
            if k + 1 < len(toks) and toks[k + 1].low in UNITS:
                text = f"{text} {toks[k + 1].text}"
            out.append(text)
        elif k + 1 < len(toks) and toks[k + 1].low in UNITS:
            out.append(f"{text} {toks[k + 1].text}")
        elif YEAR_RE.fullmatch(text):
            out.append(text)
    return out


def extract_entities(text: str) -> list[str]:
    """Return the salient entities of ``text`` in order of first appearance.

    Entities are proper-noun spans ("Prasad Chaudhari", "Battle of Gettysburg"), acronyms and
    camel-case product names, amounts with a currency, percent sign or unit ("$120,000",
    "5 km"), years, and quoted terms. Sentence-initial function words ("The", "What") are not
    entities. Duplicates are removed case-insensitively, keeping the first spelling. Used,
    among others, to check whether an answer repeats what was already said, so it favours
    precision and speed.
    """
    toks = tokenize(text)
    found: list[tuple[int, str]] = []
    for m in _QUOTED_RE.finditer(text):
        inner = m.group(1).strip()
        if inner and len(inner.split()) <= 8:
            found.append((m.start(), inner))
    for span in name_spans(toks):
        if span.key not in TIME_WORDS:
            found.append((toks[span.first].start, span.text))
    amount_pos: dict[str, int] = {}
    for t in toks:
        if t.kind == "num":
            amount_pos.setdefault(t.text, t.start)
    for amount in _amounts(toks):
        found.append((amount_pos.get(amount.split()[0], len(text)), amount))
    found.sort(key=lambda p: p[0])
    seen: set[str] = set()
    out: list[str] = []
    for _, ent in found:
        key = fold(ent)
        if key not in seen:
            seen.add(key)
            out.append(ent)
    return out
