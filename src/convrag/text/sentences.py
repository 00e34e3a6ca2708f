"""Sentence boundaries, one rule for the chunker and the extractive answer.

A period ends a sentence unless the word before it is an abbreviation ("Dr. Smith",
"e.g. the"), an initial ("John F. Kennedy"), a numbering word before a number ("No. 5",
"Stat. 2419"), or what follows cannot open a sentence: a lower case word ("approx.
twenty") or a mark other than a quote or bracket ("U.S.C. § 7"). A capital, a digit or a
letter of a script without case opens one ("。" always ends one). The chunker cuts chunks
at these ends and the answer quotes whole sentences, so both must agree on where a
sentence stops: a quoted "President John F." would be a fragment.
"""

from __future__ import annotations

import re

__all__ = ["sentence_ends", "split_sentences"]

_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]*_]*(?=\s)|[。！？]+[」』”’)]*")
"""End punctuation, with the quotes, brackets and Markdown emphasis (``**``, ``_``) that
close around it: "**Q: Can I pay yearly?** A: Yes." is a question, then its answer."""
_NON_SPACE = re.compile(r"\S")
_OPENERS = frozenset("\"'“‘([`*_")
"""Marks that can open a sentence (Markdown emphasis too); any other mark after a period
continues the sentence ("U.S.C. § 7", "Side!, released")."""
_ABBREVIATIONS = frozenset(
    {
        "e.g", "i.e", "cf", "vs", "approx", "dept", "est",
        "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "gen", "col", "lt", "capt", "sgt",
        "gov", "sen", "rep", "rev", "mt", "ft", "pub",
    }
)  # fmt: skip
"""Words whose period does not end a sentence (lower case, without the final period)."""
_NUMBER_ABBREVIATIONS = frozenset(
    {"no", "nos", "fig", "figs", "p", "pp", "vol", "vols", "ch", "sec", "art", "op", "stat"}
)
"""Words whose period does not end a sentence when a number follows ("see Fig. 3")."""


def sentence_ends(text: str, start: int = 0, end: int | None = None) -> list[int]:
    """Offsets in ``text[start:end]`` where a sentence ends and another follows."""
    end = len(text) if end is None else end
    ends: list[int] = []
    for m in _SENTENCE_END.finditer(text, start, end):
        after = _NON_SPACE.search(text, m.end(), end)
        if after is None:
            break
        nxt = after.group()
        if m.start() > start and text[m.start() - 1] in "([":
            continue  # "myTable (...) WITH": an elision, not an end
        if m.group()[0] == ".":
            # Only the word before the period matters: a bounded look back keeps this
            # linear on a long paragraph.
            before = text[max(start, m.start() - 40) : m.start()].split()
            word = before[-1].lstrip("(\"'“‘[").lower() if before else ""
            if word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()):
                continue  # "e.g. the", "Dr. Smith", "J. Smith"
            if word in _NUMBER_ABBREVIATIONS and nxt.isdigit():
                continue  # "No. 5", "Fig. 3"
            lead = m.start() - len(word) - start
            if word.isdigit() and lead <= 2 and not text[start : start + lead].strip():
                continue  # "1. Scope": a numbered item, not a sentence
        opens = (nxt.isalpha() and not nxt.islower()) or nxt.isdigit() or nxt in _OPENERS
        if m.group()[0] in ".!?…" and not opens:
            continue  # "approx. twenty", "Acme Inc. and ...", "Sunny Side!, released"
        ends.append(m.end())
    return ends


def split_sentences(text: str) -> list[str]:
    """``text`` (one paragraph, its lines joined) cut into its sentences, stripped."""
    pieces: list[str] = []
    pos = 0
    for cut in [*sentence_ends(text), len(text)]:
        piece = text[pos:cut].strip()
        if piece:
            pieces.append(piece)
        pos = cut
    return pieces
