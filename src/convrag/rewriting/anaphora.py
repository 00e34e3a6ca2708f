"""The pronouns of a message that point outside it, to something the history named.

:func:`anaphors` leaves out dummy "it" ("is it possible to ..."), pronouns whose antecedent
is in the message itself ("Did Dali ... his parents", "Guinea pigs are eaten. Is that
true?") and the non-referring uses of "that" and "there" ("so that", "is there"). Each
pronoun's test is a named predicate in :data:`_POINTS_OUT`, looked up by the word.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from convrag.text.entities import name_spans
from convrag.text.lexicon import AUX, CLAUSE_LINKS, FRAME_WORDS, FUNCTION_WORDS, PREPS, PRONOUNS, WH
from convrag.text.tokens import Token, is_plural_phrase, is_verb_like, join_tokens

__all__ = ["anaphors"]

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


_DEMONSTRATIVES = frozenset({"it", "its", "this", "that", "these", "those"})
"""What a noun phrase in an earlier sentence of the message is enough to bind."""

_TIME_NOUNS_AFTER = frozenset(
    {
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
    }
)
"""Nouns after "this/these/those" that make a time ("this week"), not a reference."""

_ENDS = ("?", ".", "!", "")
"""What follows a pronoun that ends its sentence ("" at the end of the message)."""

_CLOSES = (*_ENDS, ",")
"""What follows a pronoun that ends its clause."""

_STATEMENT_VERBS = ("do", "does", "did", "explain", "elaborate", "mean", "repeat", "")
"""Words before a "that" which points to what was said ("explain that"), or none."""


@lru_cache(maxsize=4096)
def anaphors(toks: tuple[Token, ...]) -> tuple[int, ...]:
    """Indices of pronouns that point outside the message.

    A pronoun counts only when no proper noun precedes it in the message ("Did Dali ... his
    parents" is self-contained), and "it"/"that"/"there" only in their referring uses
    ("is it true that", "is there", "the one that" are not anaphora).
    """
    out: list[int] = []
    seen_name = False
    name_starts = {s.first for s in name_spans(toks)}
    intro_end = _intro_end(toks)
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
        if stated >= 2 and t.low in _DEMONSTRATIVES:
            continue  # "Guinea pigs are eaten. Is that true?": the antecedent is right there
        points_out = _POINTS_OUT.get(t.low)
        if points_out is not None and points_out(toks, k, seen_name):
            out.append(k)
    return tuple(out)


def _intro_end(toks: tuple[Token, ...]) -> int:
    """The index of the comma that closes a topic intro ("Going back to primary sources,"),
    or -1: the intro names what the pronouns after it point to."""
    if not _TOPIC_INTRO_RE.match(join_tokens(toks)):
        return -1
    return next((k for k, t in enumerate(toks) if t.text in ",;:"), -1)


def _neighbours(toks: tuple[Token, ...], k: int) -> tuple[str, str]:
    """The lowercased words before and after token ``k`` ("" at either end)."""
    prev = toks[k - 1].low if k > 0 else ""
    nxt = toks[k + 1].low if k + 1 < len(toks) else ""
    return prev, nxt


def _personal_points_out(toks: tuple[Token, ...], k: int, seen_name: bool) -> bool:
    """ "he/she/they": unless a name earlier in the message is the antecedent, or "their"
    is bound by the question's own subject."""
    if toks[k].low == "their" and _bound_possessive(toks, k):
        return False
    return not seen_name


def _it_points_out(toks: tuple[Token, ...], k: int, seen_name: bool) -> bool:
    """ "it/its": unless bound in the message (a subject, a name, an earlier clause's noun
    phrase) or a dummy ("is it possible")."""
    if toks[k].low == "its" and _bound_possessive(toks, k):
        return False
    if _earlier_clause_np(toks, k):
        return False  # "I updated my card, but it shows errors": "it" is my card
    return not seen_name and not _expletive_it(toks, k)


def _demonstrative_points_out(toks: tuple[Token, ...], k: int, seen_name: bool) -> bool:
    """ "this/these/those": not a time ("this week"); after a name, only when it stands
    alone ("Is this true?")."""
    _, nxt = _neighbours(toks, k)
    if nxt in _TIME_NOUNS_AFTER:
        return False
    return not seen_name or nxt in _ENDS or nxt in AUX


def _that_points_out(toks: tuple[Token, ...], k: int, seen_name: bool) -> bool:
    """ "that": the pronoun ("explain that", "after that", "That is ..."), not the
    complementiser ("so that", "that he ...") nor the relative ("the one that")."""
    prev, nxt = _neighbours(toks, k)
    if prev == "so" or nxt in PRONOUNS - {"that", "this", "it"}:
        return False  # "so that", "that he ..." (complementiser)
    return (
        nxt in _CLOSES
        or prev in PREPS
        or prev in AUX
        or prev in _STATEMENT_VERBS
        or k == 0
        or (toks[k - 1].sent_start and toks[k - 1].kind == "punct")
        or (nxt not in FUNCTION_WORDS and prev in PREPS | AUX | {""})
    )


def _there_points_out(toks: tuple[Token, ...], k: int, seen_name: bool) -> bool:
    """ "there": a place ("live there"), not existential ("is there", "there are")."""
    prev, nxt = _neighbours(toks, k)
    if nxt in AUX or prev in AUX or nxt in ("'s", "’s"):
        return False  # "is there", "there are"
    return prev in PREPS or nxt in _CLOSES or prev not in FUNCTION_WORDS


_POINTS_OUT: dict[str, Callable[[tuple[Token, ...], int, bool], bool]] = {
    **dict.fromkeys(
        ("he", "she", "him", "his", "her", "hers", "they", "them", "their", "theirs"),
        _personal_points_out,
    ),
    **dict.fromkeys(("it", "its"), _it_points_out),
    **dict.fromkeys(("this", "these", "those"), _demonstrative_points_out),
    "that": _that_points_out,
    "there": _there_points_out,
}
"""Each pronoun's test of whether it points outside the message (``seen_name``: a name,
or a topic intro, came before it)."""


def _bound_possessive(toks: tuple[Token, ...], k: int) -> bool:
    """ "its/their" at ``k`` bound by a subject of the message whose number matches ("its"
    singular, "their" plural): the question's own (:func:`_opening_subject`), or one with
    its verb right before the possessive (:func:`_subject_before_verb`)."""
    plural_wanted = toks[k].low == "their"
    return any(
        noun is not None and is_plural_phrase(noun) == plural_wanted
        for noun in (_opening_subject(toks, k), _subject_before_verb(toks, k))
    )


def _opening_subject(toks: tuple[Token, ...], k: int) -> str | None:
    """ "Did burlesque stay true to its roots?": the head of the common-noun subject after
    the auxiliary (or wh-word plus auxiliary) that opens the question, before ``k``."""
    j = 0
    if j < k and toks[j].low in WH:
        j += 1
    if j >= k or toks[j].low not in AUX:
        return None
    j += 1
    if j < k and toks[j].low in ("the", "a", "an", "this", "that", "these", "those", "all"):
        j += 1
    words: list[Token] = []
    while j < k and toks[j].kind == "word" and toks[j].low not in FUNCTION_WORDS:
        words.append(toks[j])
        j += 1
    if not words or is_verb_like(words[-1]) or words[-1].low in FRAME_WORDS:
        return None
    return words[-1].low


_SUBJECT_DETS = frozenset({"the", "a", "an", "this", "that", "these", "those", "each", "every"})


def _subject_before_verb(toks: tuple[Token, ...], k: int) -> str | None:
    """ "Which wins if the page defines its own title?": the head of a "the + noun"
    subject whose verb comes right before ``k``."""
    if k < 3 or toks[k - 1].kind != "word" or toks[k - 1].low in FUNCTION_WORDS | FRAME_WORDS:
        return None
    j = k - 2
    while j >= 0 and toks[j].kind == "word" and toks[j].low not in FUNCTION_WORDS and k - j <= 4:
        j -= 1
    if j == k - 2 or j < 0 or toks[j].low not in _SUBJECT_DETS:
        return None
    return toks[k - 2].low


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
