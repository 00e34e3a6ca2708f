"""Rewrite a follow-up into a standalone query: pronoun and ellipsis resolution.

When no LLM is configured, :func:`contextualize` alone turns a follow-up such as "What about
her basic salary?" into a query ("What about Prasad Chaudhari's basic salary?") that BM25 and
dense retrieval can use without the conversation. Personal pronouns become the most salient
person (or the people the previous answer listed), "it/this/that" the previous turn's topic,
and fragments ("and in 2019?", "why?") are mapped onto the
previous question. When no referent is credible, the pronoun is left as it is: a wrong name
hurts retrieval more than a vague pronoun. Credible means well evidenced: a name the history
uses as a name (not an adjective such as "Indian", a word capitalised by its position, or the
first word of a term such as "Sickle cell"), or a noun phrase of more than one word ("the
reverse order of text", not "the body"). Regex and word-list heuristics over the cached
models of :mod:`convrag.rewriting.history`, so a call takes a fraction of a millisecond.

This module keeps the entry points (:func:`contextualize`, which classifies the message
first, and :func:`resolve_follow_up`, for a message its caller classified ``follow_up``) and
the rule tables; the steps live beside it, by purpose: :mod:`~convrag.rewriting.referents`
(what the history offers: people, groups, the topic, a place),
:mod:`~convrag.rewriting.pronouns` (pronoun resolution by kind) and
:mod:`~convrag.rewriting.fragments` (the fragment rules of :data:`_RULES`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from convrag.rewriting.classify import classify, split_pleasantries
from convrag.rewriting.fragments import (
    Ask,
    rule_compare,
    rule_expand_name,
    rule_lead_fragment,
)
from convrag.rewriting.history import Turn
from convrag.rewriting.pronouns import previous_question, resolve_pronouns
from convrag.rewriting.referents import referents
from convrag.text.lexicon import AUX, WH
from convrag.text.tokens import clean, has_inner_cap, tokenize

__all__ = ["PRONOUN_RULES", "RULES", "check_rules", "contextualize", "resolve_follow_up"]


_SPACE_PUNCT_RE = re.compile(r"\s+([?.!,;:])")


def contextualize(message: str, history: Sequence[Turn], *, without: Collection[str] = ()) -> str:
    """Return a standalone version of ``message`` given the earlier ``history`` (oldest first).

    Standalone messages, messages with no history and no-retrieval messages come back
    unchanged (whitespace-normalised). Follow-ups get their pronouns replaced by the most
    salient referent (personal pronouns by the person or the people just listed, "it/that" by
    the previous topic), and fragments are completed from the previous question. The original
    words are kept except replaced pronouns, the output stays short for BM25 and dense
    retrieval, and it is never empty (an empty message yields the previous question, if any).
    ``without`` names rules of :data:`RULES` to switch off (to measure what each earns).
    """
    msg = clean(message)
    if msg and history and classify(msg, history) != "follow_up":
        return message.strip()
    return resolve_follow_up(message, history, without=without)


def resolve_follow_up(
    message: str, history: Sequence[Turn], *, without: Collection[str] = ()
) -> str:
    """:func:`contextualize` for a message its caller has classified ``follow_up``
    already: the rules rewrite it without classifying it again."""
    msg = clean(message)
    if not msg:
        for turn in reversed(history):
            if turn.question.strip():
                return clean(turn.question)
        return "?"
    if not history:
        return message.strip()
    prefix, core = split_pleasantries(msg)
    off = check_rules(without)
    out = clean(_SPACE_PUNCT_RE.sub(r"\1", _rewrite(core, history, off)))
    if not out:
        return msg
    if out == clean(_SPACE_PUNCT_RE.sub(r"\1", core)):
        return message.strip()  # nothing resolved: the user's own words, not a re-cased copy
    return prefix + _as_question(out, capitalize=not prefix)


def check_rules(names: Collection[str]) -> frozenset[str]:
    """``names`` as a set of rules, or ValueError naming the unknown ones and the rules."""
    unknown = sorted(set(names) - set(RULES))
    if unknown:
        raise ValueError(
            f"unknown rewrite rule {', '.join(unknown)}; the rules are {', '.join(RULES)}"
        )
    return frozenset(names)


def _as_question(text: str, *, capitalize: bool) -> str:
    """Normalise a rewritten query: capital first letter, and "?" after a bare question."""
    if capitalize and text[0].islower() and not has_inner_cap(text.split()[0]):
        text = text[0].upper() + text[1:]
    toks = tokenize(text)
    single = not any(t.text in ".!?" for t in toks)
    if single and toks and (toks[0].low in WH or toks[0].low in AUX) and text[-1].isalnum():
        text += "?"
    return text


def _rewrite(msg: str, history: Sequence[Turn], off: frozenset[str] = frozenset()) -> str:
    """Rewrite a follow-up: the first rule of :data:`_RULES` (not in ``off``) that
    applies, else the message with its pronouns resolved."""
    refs = referents(history)
    refs.off = off
    resolved, changed = resolve_pronouns(msg, refs)
    ask = Ask(msg, history, refs, previous_question(history, refs), resolved, changed)
    for name, rule in _RULES:
        if name not in off:
            out = rule(ask)
            if out is not None:
                return out
    return resolved


_RULES: tuple[tuple[str, Callable[[Ask], str | None]], ...] = (
    ("lead_fragment", rule_lead_fragment),
    ("compare", rule_compare),
    ("expand_name", rule_expand_name),
)
"""The fragment rules, tried in order; the first that applies rewrites the message. Each
was measured alone (``convrag eval rewrite --without RULE``, ``convrag eval mtrag
--without RULE``; the figures are in BENCHMARKS.md). "Tell me more" + the topic was dropped:
it moved nothing on CANARD or either MTRAG domain, and a bare continuation now reuses the
previous standalone question (:mod:`convrag.rewriting.gate`)."""


PRONOUN_RULES = ("person", "group", "topic")
"""Pronoun resolution, by kind: "he/she", "they/their", "it/this/that"."""


RULES: tuple[str, ...] = (
    *PRONOUN_RULES,
    *(name for name, _ in _RULES),
    "code_term",
)
"""Every rule a caller may switch off (``contextualize(..., without=...)``); ``code_term``
is the technical-term swap inside "what about X?" and "and X?"
(:func:`~convrag.rewriting.fragments.swap_code_term`)."""
