"""Answer units: the pieces of a source text an extractive answer may quote.

Prose is cut into sentences (:mod:`convrag.text.sentences`), a list into its items, a
Markdown table into rows under their column headers, and a paragraph of short field lines
("Name", "Position: Engineer") stays one record. :func:`quotable` says which units read as
whole statements, and the heading tests say which only title what follows them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from convrag.text.lexicon import AUX
from convrag.text.lines import LIST_ITEM
from convrag.text.sentences import split_sentences
from convrag.text.tokens import is_verb_like, tokenize

__all__ = ["heads_a_section", "looks_like_heading", "names_a_section", "quotable", "sentences"]

_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
"""A Markdown image: its alt text describes a picture the answer cannot show."""


def sentences(text: str) -> list[str]:
    """Answer units: sentences of prose, but a paragraph of short field lines ("Name",
    "Position: Engineer", "Salary: $1") stays one record, joined with "; ", because its
    lines mean nothing apart."""
    units: list[str] = []
    for para in re.split(r"\n\s*\n", _IMAGE.sub("", text)):
        # Markdown headings title a section; they are not statements to quote.
        lines = [
            ln.strip() for ln in para.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
        ]
        if not lines:
            continue
        if all(ln.startswith("|") and ln.endswith("|") for ln in lines):
            units.extend(_table_rows(lines))
            continue
        if _is_pipe_table(lines):
            units.extend(_table_rows([f"|{ln.strip('|')}|" for ln in lines]))
            continue
        if any(LIST_ITEM.match(ln) for ln in lines):
            units.extend(_list_units(lines))
            continue
        if (
            len(lines) > 1
            and sum(len(ln) for ln in lines) / len(lines) < 60
            and not any(ln.rstrip("*_").endswith((".", "!", "?")) for ln in lines[:-1])
            and not any(ln[0].islower() for ln in lines[1:])  # a wrapped sentence goes on
        ):
            units.append("; ".join(lines))
            continue
        units.extend(_prose(lines))
    return units


_ANSWER_LABEL = re.compile(r"(?:\*\*|__)?(?:A|Answer)(?:\*\*|__)?:(?:\*\*|__)?\s+(?=\S)")
"""An FAQ's answer label ("A: Yes.", "**Answer:** Yes."): it names the speaker, and an
answer quoting the sentence reads "A: Students get ..." with it."""


def _prose(lines: Sequence[str]) -> list[str]:
    """The sentences of prose lines, joined (a sentence may wrap), less stray marks and
    an FAQ's answer label."""
    units = (_ANSWER_LABEL.sub("", s, count=1) for s in split_sentences(" ".join(lines)))
    return [s for s in units if len(s) > 2]


def _list_units(lines: Sequence[str]) -> list[str]:
    """A paragraph holding a list: each item is a unit of its own, and the prose between
    items is split into sentences ("Follow these steps: 1. Mount ..." would otherwise
    be cut after "1.")."""
    units: list[str] = []
    prose: list[str] = []

    def flush() -> None:
        if prose:
            units.extend(_prose(prose))
            prose.clear()

    for line in lines:
        if LIST_ITEM.match(line):
            flush()
            units.append(line)
        else:
            prose.append(line)
    flush()
    return units


_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_RULE_CELL = re.compile(r":?-{3,}:?")


def _is_pipe_table(lines: Sequence[str]) -> bool:
    """A Markdown table written without its outer pipes ("Plan | Retention", "--- | ---",
    "Plus | 30 days"): every line has a cell border and the second is the header's rule."""
    return (
        len(lines) > 2
        and all(_CELL_SPLIT.search(ln) for ln in lines)
        and all(_RULE_CELL.fullmatch(c.strip()) for c in _CELL_SPLIT.split(lines[1].strip("|")))
    )


def _table_rows(lines: Sequence[str]) -> list[str]:
    """A Markdown table's data rows as records, each cell under its column's header
    ("Day: Saturday; Hours: closed"): a row alone is the answer, the header its labels."""
    rows = [[c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(ln)[1:-1]] for ln in lines]
    header: list[str] = []
    if len(rows) > 1 and rows[1] and all(_RULE_CELL.fullmatch(c) for c in rows[1]):
        header, rows = rows[0], rows[2:]
    units = []
    for cells in rows:
        if header:
            pairs = [f"{h}: {c}" if h else c for h, c in zip(header, cells, strict=False) if c]
        else:
            pairs = [c for c in cells if c]
        if pairs:
            units.append("; ".join(pairs))
    return units


_CLOSING = (".", "!", "?", ":", ";", '"', "'", ")")
"""What ends a statement, a lead-in or a quotation, and never a heading."""


def looks_like_heading(unit: str) -> bool:
    """A title line ("AquaPure 3000 Water Filter - User Manual", "Help Desk Office
    Hours"): no closing punctuation and every word capitalised (or a number or a dash)."""
    if unit.rstrip().endswith(_CLOSING):
        return False
    words = unit.split()
    return len(words) <= 12 and all(
        w[:1].isupper() or not w[:1].isalpha() or w in _MINOR_WORDS for w in words
    )


def names_a_section(unit: str) -> bool:
    """A heading in sentence case ("Machine learning model creation workflow", "VMware
    Systems storage options"): a short capitalised line with no closing punctuation and
    no verb. Its words say what the text under it is about, which is what a question's
    words match, but it answers nothing itself: the extractive answer quotes the statement
    under it instead."""
    if unit.rstrip().endswith(_CLOSING) or "; " in unit:
        return False
    toks = tokenize(unit)
    # After a gerund ("Getting started with ..."), an "-ed" word is a participle.
    gerund = bool(toks) and toks[0].low.endswith("ing")
    return (
        len(unit.split()) <= 8
        and unit[:1].isupper()
        and not LIST_ITEM.match(unit)
        and not any(
            is_verb_like(t) and not (gerund and t.low.endswith("ed") and t.low not in AUX)
            for t in toks
        )
    )


_NOT_IN_A_HEADING = re.compile(r"[,;=`(){}\[\]<>|]")


def heads_a_section(unit: str) -> bool:
    """Whether ``unit`` titles the text under it: a heading in any case (``looks_like_heading``,
    :func:`names_a_section`), or a short capitalised line with no closing punctuation and
    none of a list's, a record's or code's marks ("Checking whether a debug target is
    enabled"); never a record ("Name; Position: Engineer"). Only a unit with text after it
    can be told from a cut-off sentence."""
    if "; " in unit:
        return False
    if looks_like_heading(unit) or names_a_section(unit):
        return True
    return (
        not unit.rstrip().endswith(_CLOSING)
        and len(unit.split()) <= 12
        and unit[:1].isupper()
        and not LIST_ITEM.match(unit)
        and not _NOT_IN_A_HEADING.search(unit)
    )


_MINOR_WORDS = frozenset({"a", "an", "and", "at", "by", "for", "in", "of", "on", "or", "the", "to"})


def is_question(unit: str) -> bool:
    """Whether ``unit`` asks (ends with "?", Markdown emphasis after it included: an FAQ's
    "**Q: Can I pay yearly?**")."""
    return unit.rstrip().rstrip("*_").endswith("?")


def quotable(unit: str, *, first: bool, last: bool) -> bool:
    """Whether an answer may quote ``unit`` as a whole statement.

    A chunk is cut from a longer text, so its first unit may start mid-sentence (a lower
    case start) and its last may stop mid-sentence (no closing punctuation). A unit of
    three words or fewer is a heading or a label, not an answer. Field records ("Name;
    Position: Engineer") are whole by construction.
    """
    if "; " in unit:
        return True
    if len(unit.split()) <= 3:
        return False
    if looks_like_heading(unit):
        return False
    if LIST_ITEM.match(unit):
        return True  # an item of a list is whole, with or without a full stop
    if first and unit[:1].islower():
        return False
    ended = unit.rstrip().rstrip("*_").endswith((".", "!", "?", '"', "'", ")", ":"))
    return not (last and not ended)
