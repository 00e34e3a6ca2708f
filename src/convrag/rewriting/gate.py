"""The gate a rules rewrite passes before retrieval uses it (and the page shows it).

The rules garble some questions on real documents: a pronoun replaced inside a fixed
phrase ("And how do I undo that?" -> "... undo MIME?"), a fragment that no longer reads
as the question it was ("why" turned into "what"), a referent the recent history never
named. A rewrite that fails a check is dropped: the turn searches the raw question and
the history-aware query instead (:mod:`convrag.nodes.retrieve_vectors`), so a bad rule
costs nothing. Checks are data: :data:`CHECKS`, each a named predicate on the message and
its rewrite, first failure reported.

A bare continuation ("Why?", "Why not?", "How?", "Tell me more") asks about the previous
answer: :func:`is_continuation` says so, and the rewrite node reuses the previous turn's
standalone question (and its cited documents as evidence) instead of gluing strings.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Callable, Collection, Iterable, Sequence

from convrag.rewriting.anaphora import anaphors
from convrag.rewriting.classify import WHAT_ABOUT_RE, split_pleasantries
from convrag.rewriting.history import Turn
from convrag.rewriting.resolve import RULES, resolve_follow_up
from convrag.text.lexicon import AUX, DETS, FUNCTION_WORDS, PREPS, PRONOUNS, WH
from convrag.text.tokens import (
    Token,
    clean,
    content_words,
    fold,
    is_plural_phrase,
    is_verb_like,
    strip_possessive,
    tokenize,
)

_CONTINUATION_RE = re.compile(
    r"^(?:(?:and|but|so|ok(?:ay)?|really|hmm+)[\s,]+)*(?:why(?:\s+not)?|how(?:\s+so|\s+come)?|"
    r"(?:(?:can|could|would)\s+you\s+)?(?:please\s+)?(?:tell\s+me\s+more|elaborate(?:\s+more)?"
    r"(?:\s+on\s+(?:that|this|it))?|explain(?:\s+(?:more|further|that|this|it))?|go\s+on|"
    r"continue|more(?:\s+details?)?|details?|in\s+what\s+way|such\s+as|for\s+example|like\s+what))"
    r"(?:\s+please)?[\s?.!]*$",
    re.IGNORECASE,
)

_FIXED_VERBS = frozenset(
    {
        "do",
        "does",
        "did",
        "done",
        "doing",
        "undo",
        "redo",
        "provide",
        "prevent",
        "avoid",
        "fix",
        "stop",
        "cancel",
        "reverse",
        "achieve",
        "mean",
        "say",
        "said",
    }
)
"""Verbs whose "that/it" is an action or a statement, not a thing the history named."""

_DEMONSTRATIVES = frozenset({"it", "this", "that"})


def is_continuation(message: str) -> bool:
    """Whether ``message`` only asks to go on about the previous answer ("Why not?")."""
    return bool(_CONTINUATION_RE.match(split_pleasantries(clean(message))[1]))


def _words(text: str) -> list[Token]:
    return [t for t in tokenize(text) if t.kind != "punct"]


def _asks(text: str) -> bool:
    """A question: ends with "?" or opens with a question word or an auxiliary."""
    toks = _words(split_pleasantries(clean(text))[1])
    return text.rstrip().endswith("?") or bool(toks and (toks[0].low in WH | AUX))


def _not_a_question(message: str, rewrite: str, history: Sequence[Turn]) -> bool:
    """The message asks, its rewrite does not: a fragment glued to something."""
    return _asks(message) and not _asks(rewrite)


def _type_changed(message: str, rewrite: str, history: Sequence[Turn]) -> bool:
    """The question word changed ("why" asked, "what" searched)."""
    m = WHAT_ABOUT_RE.match(clean(message))
    asked = [t.low for t in _words(m.group("rest") if m else message) if t.low in WH]
    said = [t.low for t in _words(rewrite) if t.low in WH]
    return bool(asked and said) and said[0] not in asked


def _replaced(message: str, rewrite: str) -> list[tuple[int, list[str], list[str]]]:
    """(position in the message, words replaced, words put instead) of each change."""
    a = [t.low for t in _words(message)]
    b = [t.low for t in _words(rewrite)]
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()
    return [(i1, a[i1:i2], b[j1:j2]) for op, i1, i2, j1, j2 in ops if op != "equal"]


def _fixed_phrase(message: str, rewrite: str, history: Sequence[Turn]) -> bool:
    """A "that/it" object of a verb of action replaced ("undo that?", "provide it"): the
    pronoun closes the clause (an end or a preposition follows), so it is no subject
    ("does it offer" keeps its resolution)."""
    toks = tokenize(message)
    words = [k for k, t in enumerate(toks) if t.kind != "punct"]
    for i, old, _ in _replaced(message, rewrite):
        if not old or not set(old) <= _DEMONSTRATIVES or i == 0 or i >= len(words):
            continue
        at = words[i]
        after = toks[at + 1] if at + 1 < len(toks) else None
        closes = after is None or after.kind == "punct" or after.low in PREPS
        if closes and toks[words[i - 1]].low in _FIXED_VERBS:
            return True
    return False


def _unsupported(message: str, rewrite: str, history: Sequence[Turn]) -> bool:
    """A word put in that the conversation never said (the rules take referents from the
    whole history: a dialog's subject may be named only in its first exchange); the
    titles of the documents its answers cited count as said ("this policy")."""
    recent = " ".join(
        f"{t.question} {t.standalone or ''} {t.answer} {' '.join(t.titles)}" for t in history
    )
    said = {strip_possessive(t.low).rstrip(".") for t in tokenize(fold(recent))}
    put = {
        strip_possessive(w).rstrip(".") for _, _, new in _replaced(message, rewrite) for w in new
    }
    own = {strip_possessive(t.low).rstrip(".") for t in content_words(tokenize(fold(rewrite)))}
    return bool((put & own) - said)


_CLAUSE_WORDS = WH | AUX | frozenset({"whether"})
"""Words a noun phrase put for a pronoun never holds: a clause came with it."""

_NO_PHRASE_END = FUNCTION_WORDS | frozenset(
    {"get", "got", "give", "make", "tell", "know", "say", "mean", "find", "see"}
)
"""Words that end no noun phrase: grammar words, and verbs ("the resource detector get"
is a subject and its verb)."""


def _not_a_phrase(message: str, rewrite: str, history: Sequence[Turn]) -> bool:
    """What was put for a pronoun is no noun phrase ("the callback tell whether",
    "what's", "the Roman Empire's religion" is fine), or the rewrite doubles a word the
    message did not ("a builder for for sorted maps")."""
    named = {t.low for t in _words(rewrite) if t.text[:1].isupper()}
    for _, old, new in _replaced(message, rewrite):
        if not old or not set(old) <= PRONOUNS or set(new) <= DETS:
            continue  # a determiner for "their" leads the noun the message had
        last = tokenize(strip_possessive(new[-1]))
        if (set(new) - named) & _CLAUSE_WORDS or (
            last
            and new[-1] not in named
            and (last[0].low in _NO_PHRASE_END or is_verb_like(last[0]))
        ):
            return True
    return _doubled(rewrite) > _doubled(message)


_SINGULAR_VERBS = frozenset({"is", "was", "does", "has", "isn't", "wasn't", "doesn't"})


def _number_disagrees(message: str, rewrite: str, history: Sequence[Turn]) -> bool:
    """A singular "it/this/that" beside a singular verb replaced by a plural phrase ("What
    is it?" -> "What is the Lite pricing plans available?"): the referent is not what the
    message speaks of, or not as the message speaks of it. The topic rule already refuses
    a plural topic for "it"; this catches any other way a rewrite gets there."""
    words = [t.low for t in _words(message)]
    for i, old, new in _replaced(message, rewrite):
        if len(old) != 1 or old[0] not in _DEMONSTRATIVES or not new:
            continue
        beside = {words[j] for j in (i - 1, i + 1) if 0 <= j < len(words)}
        if beside & _SINGULAR_VERBS and is_plural_phrase(" ".join(new)):
            return True
    return False


def _doubled(text: str) -> int:
    """How many words follow the same word ("for for")."""
    words = [t.low for t in _words(text)]
    return sum(a == b for a, b in itertools.pairwise(words))


CHECKS: tuple[tuple[str, Callable[[str, str, Sequence[Turn]], bool]], ...] = (
    ("not_a_question", _not_a_question),
    ("type_changed", _type_changed),
    ("fixed_phrase", _fixed_phrase),
    ("not_a_phrase", _not_a_phrase),
    ("unsupported_referent", _unsupported),
    ("number_disagrees", _number_disagrees),
)
"""Each check's name and its predicate: true rejects the rewrite."""


def rejects(message: str, rewrite: str, history: Sequence[Turn]) -> str | None:
    """The name of the first check ``rewrite`` fails, or None when retrieval may use it."""
    for name, failed in CHECKS:
        if failed(message, rewrite, history):
            return name
    return None


SWITCHES: tuple[str, ...] = ("continuation", "gate", *RULES)
"""What ``--without`` may switch off: the continuation reuse, the gate, and each rule."""


def check_switches(names: Iterable[str]) -> frozenset[str]:
    """``names`` as a set of :data:`SWITCHES`, or ValueError naming the unknown ones."""
    wanted = frozenset(names)
    unknown = sorted(wanted - set(SWITCHES))
    if unknown:
        raise ValueError(
            f"unknown rewrite rule {', '.join(unknown)}; the rules are {', '.join(SWITCHES)}"
        )
    return wanted


def gated_rewrite(
    message: str, history: Sequence[Turn], *, without: Collection[str] = ()
) -> tuple[str, str | None]:
    """The rules' standalone query for a message classified ``follow_up`` (by the caller,
    once: it is not classified again here), and the check its rewrite failed.

    A continuation gets the previous turn's standalone question, when that one stands
    alone (has no pronoun pointing outside it). Otherwise the rules
    rewrite; a rewrite that fails a check of :data:`CHECKS` gives way to the message as
    typed (with the check's name), and so does one that changed nothing. ``without``
    switches off any of :data:`SWITCHES`.
    """
    off = check_switches(without)
    if history and "continuation" not in off and is_continuation(message):
        last = clean(history[-1].standalone or history[-1].question)
        # A previous question that still leans on a pronoun ("What divides them?") is no
        # more standalone than the message; the history query already searches it.
        return (message.strip() if anaphors(tokenize(last)) else last), None
    query = resolve_follow_up(message, history, without=off & set(RULES))
    if [t.low for t in _words(query)] == [t.low for t in _words(message)]:
        return message.strip(), None
    why = None if "gate" in off else rejects(message, query, history)
    return (message.strip(), why) if why else (query, None)
