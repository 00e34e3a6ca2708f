"""Tokenisation and small string helpers for the rule-based language code.

:func:`tokenize` splits a text into words, numbers (with their currency or unit), initials
("J.R.", "Dr.") and punctuation, and marks the tokens that open a sentence; entity extraction,
classification and rewriting all read these tokens rather than raw text. Tokenising and
accent folding are cached per string, because a conversation re-reads the same turns on every
message.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

from convrag.text.lexicon import AUX, FRAME_WORDS, FUNCTION_WORDS, PAST_VERBS, POSTNOMINAL

__all__ = [
    "Token",
    "clean",
    "content_words",
    "fold",
    "has_inner_cap",
    "is_acronym",
    "is_capitalised",
    "is_plural_phrase",
    "is_verb_like",
    "join_tokens",
    "phrasal_compounds",
    "storable",
    "strip_end",
    "strip_possessive",
    "tokenize",
]

_TOKEN_RE = re.compile(
    r"""
    (?P<num>[$€£¥]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?(?:%|[^\W\d_]{1,3}\b)?)
    |(?P<init>(?:[A-Z]\.)+['’]s\b|(?:[A-Z]\.){2,}|[A-Z]\.(?=\s+[A-Z])|(?:St|Mt|Ft|Mr|Mrs|Ms|Dr|Jr|Sr|Prof|Gen|Gov
        |Sen|Rep|Rev|Lt|Col|Capt|Sgt|Pres|Sec)\.)
    |(?P<word>[^\W_](?:[\w'’&-]*[^\W_])?)
    |(?P<punct>[^\w\s])
    """,
    re.VERBOSE,
)
_POSSESSIVE_RE = re.compile(r"['’]s$", re.IGNORECASE)
_SPACE_RE = re.compile(r"\s+")
# NUL and surrogates: a str decoded from JSON keeps a lone "\ud800" as such (a pair
# becomes one astral character), so any surrogate left in a str is unpaired.
_UNSTORABLE_RE = re.compile("[\x00\ud800-\udfff]")
_TRAILING_PUNCT_RE = re.compile(r"[\s?.!,;:]+$")
_BOUNDARY_PUNCT = frozenset('.!?:;"“”()[]•*-–—')


class Token(NamedTuple):
    """A token: its text, lowercased text, character span, kind, and whether it opens a sentence."""

    text: str
    low: str
    start: int
    end: int
    kind: str  # "num" | "init" | "word" | "punct"
    sent_start: bool


@lru_cache(maxsize=4096)
def tokenize(text: str) -> tuple[Token, ...]:
    """Split ``text`` into word, number, initial and punctuation tokens with sentence starts."""
    toks: list[Token] = []
    boundary = True
    prev_end = 0
    has_newline = "\n" in text
    make = tuple.__new__  # skips the NamedTuple's Python-level __new__: this is the hot loop
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "punct"
        s = m.group()
        start, end = m.span()
        if has_newline and "\n" in text[prev_end:start]:
            boundary = True
        toks.append(make(Token, (s, s.lower(), start, end, kind, boundary)))
        boundary = kind == "punct" and s in _BOUNDARY_PUNCT
        prev_end = end
    return tuple(toks)


@lru_cache(maxsize=8192)
def fold(s: str) -> str:
    """Lowercase and strip accents so "Dalí" and "Dali" share a key."""
    norm = unicodedata.normalize("NFKD", s.lower())
    return "".join(c for c in norm if not unicodedata.combining(c))


def strip_possessive(s: str) -> str:
    """Drop a trailing "'s" so "Chaudhari's" matches the name "Chaudhari"."""
    return _POSSESSIVE_RE.sub("", s)


def is_capitalised(t: Token) -> bool:
    """Whether a word or initial starts with a capital: a candidate name word."""
    return t.kind in ("word", "init") and t.text[0].isupper()


def is_acronym(s: str) -> bool:
    """All capitals with at least two letters ("NASA", "U.S."): a name even at a sentence start."""
    letters = [c for c in s if c.isalpha()]
    return len(letters) >= 2 and all(c.isupper() for c in letters)


_ACRONYM = re.compile(r"\b[A-Z]{2,6}\b")
_SKIPPABLE = r"(?:(?:of|and|for|the|to|on|in|&)[\s-]+)?"


def spelled_out(text: str, acronyms_of: str) -> dict[str, str]:
    """The acronyms of ``acronyms_of`` ("MFA", "CISO") whose words ``text`` spells out,
    each with the first spelling found ("Multi-factor authentication", "Chief Information
    Security Officer").

    An acronym is spelled out by consecutive words, hyphenated parts included, whose
    initials are its letters in order; a short function word between them may be skipped
    ("Bureau of Labor Statistics" for "BLS"), but the spelled words themselves are content
    words of three letters or more ("is the" never spells "IT"). A question asks "is MFA
    required?" of a document that only ever writes the words out.
    """
    found: dict[str, str] = {}
    for acronym in sorted(set(_ACRONYM.findall(acronyms_of))):
        parts = [rf"({c}[\w']{{2,}})" for c in acronym.lower()]
        pattern = r"\b" + (r"[\s-]+" + _SKIPPABLE).join(parts) + r"\b"
        for match in re.finditer(pattern, text, re.IGNORECASE):
            if not any(w.lower() in FUNCTION_WORDS for w in match.groups()):
                found[acronym] = match.group(0)
                break
    return found


_PARTICLES = ("up", "out", "down", "off", "in")
_PHRASAL_RE = re.compile(r"\b([a-z]{2,})[\s-]+(" + "|".join(_PARTICLES) + r")\b")


def _base(verb: str) -> str:
    """A verb's crude base form: "backed", "logging", "sets" to "back", "log", "set"."""
    for ending, shortest in (("ing", 6), ("ed", 5), ("s", 4)):
        if verb.endswith(ending) and len(verb) >= shortest and not verb.endswith("ss"):
            verb = verb[: -len(ending)]
            if len(verb) > 2 and verb[-1] == verb[-2] and verb[-1] not in "aeiouls":
                verb = verb[:-1]
            break
    return verb


def phrasal_compounds(text: str) -> set[str]:
    """The one-word nouns that ``text``'s phrasal verbs are written as elsewhere: "backed
    up" is "backup", "logging in" "login", "set up" "setup", "shut down" "shutdown".

    A question asks "How often are backups made?" of a text that says "databases are
    backed up every 4 hours": without the compound the two share no word. A verb and
    particle that make no such noun ("stored in" gives "storein") match nothing.
    """
    return {_base(v) + p for v, p in _PHRASAL_RE.findall(text.lower())}


def expand_acronyms(query: str, text: str) -> str:
    """``query`` with each acronym that ``text`` spells out followed by its spelling in
    brackets ("is MFA (Multi-factor authentication) required?"), so that words and
    embeddings compare it with the text that says it in full."""
    for acronym, words in spelled_out(text, query).items():
        query = re.sub(rf"\b{acronym}\b", f"{acronym} ({words})", query)
    return query


def has_inner_cap(s: str) -> bool:
    """Lowercase start with a capital inside ("iPhone", "eBay"): a product name, not a word."""
    return s[0].islower() and s[1:] != s[1:].lower()


def is_verb_like(t: Token) -> bool:
    """Auxiliaries, common irregular past tenses and "-ed" forms: words that end a noun phrase."""
    return (
        t.low in AUX
        or t.low in PAST_VERBS
        or (t.text[0].islower() and len(t.text) > 4 and t.low.endswith("ed"))
    )


def content_words(toks: tuple[Token, ...]) -> list[Token]:
    """Tokens that carry meaning: not function words and not question-framing words."""
    return [
        t
        for t in toks
        if t.kind in ("word", "num", "init")
        and t.low not in FUNCTION_WORDS
        and t.low not in FRAME_WORDS
    ]


def content_terms(text: str) -> set[str]:
    """The lower-cased :func:`content_words` of ``text``, as a set."""
    return {t.low for t in content_words(tokenize(text))}


def is_plural_phrase(phrase: str) -> bool:
    """Whether the head noun of a phrase is plural ("the salaries of ..." -> True), past
    an adjective that follows it ("the plans available" -> True)."""
    words = phrase.split()
    if not words or "of" in words:
        words = words[: words.index("of")] if "of" in words else words
    while len(words) > 1 and words[-1].lower() in POSTNOMINAL:
        words = words[:-1]
    head = words[-1].lower() if words else ""
    return head.endswith("s") and not head.endswith(("ss", "us", "is", "'s", "’s"))


def clean(message: str) -> str:
    """Collapse runs of whitespace and trim, so that the rules see one spacing."""
    return _SPACE_RE.sub(" ", message).strip()


def storable(text: str) -> str:
    """``text`` without what PostgreSQL cannot store in a text or JSONB value: NUL, and
    lone surrogates (which do not encode as UTF-8). User input with them is refused at
    the API; text from an LLM or the web is cleaned where it enters instead, so that one
    stray byte in a reply does not fail the turn when it is stored."""
    return _UNSTORABLE_RE.sub("", text)


def strip_end(s: str) -> str:
    """Drop trailing spaces and punctuation, to splice a phrase into another sentence."""
    return _TRAILING_PUNCT_RE.sub("", s)


def join_tokens(toks: tuple[Token, ...]) -> str:
    """The tokens' texts joined by single spaces: a normalised text to match patterns on."""
    return " ".join(t.text for t in toks)
