"""The rules strategy: the deterministic contextualizer and its gate, no model.

:class:`RulesRewriter` reads the history once, as the rules read it (each turn with the
standalone question it was rewritten to and the titles its answer cited), classifies the
message on it once (:func:`~convrag.rewriting.classify.classify`), and rewrites a follow-up
with :func:`~convrag.rewriting.gate.gated_rewrite` over the turns that said something (a
greeting or a thanks names nothing a follow-up can point to).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from convrag.records import HistoryTurn
from convrag.rewriting.classify import classify, is_no_retrieval, split_pleasantries
from convrag.rewriting.gate import gated_rewrite
from convrag.rewriting.history import Turn
from convrag.rewriting.rewriter import Rewrite
from convrag.state import RewriteMethod
from convrag.text.tokens import clean


@dataclass(frozen=True, slots=True)
class RulesRewriter:
    """Classify and rewrite by the rules; ``without`` switches rules off (measurement,
    ``rewrite_rules_off``)."""

    without: tuple[str, ...] = ()

    async def rewrite(self, message: str, history: Sequence[HistoryTurn]) -> Rewrite:
        """A follow-up gets the rules' query (``unchanged`` when the gate kept the message
        as typed, and ``rejected`` then names the check); anything else stays as typed."""
        turns = rules_turns(history)
        classification = classify(message, turns)
        if classification != "follow_up":
            return Rewrite(classification, message, "unchanged")
        query, rejected = rules_query(message, turns, self.without)
        method: RewriteMethod = "unchanged" if query == message.strip() else "rules"
        return Rewrite(classification, query, method, rejected=rejected)


def rules_turns(history: Sequence[HistoryTurn]) -> list[Turn]:
    """The history as the rules read it: each turn with its standalone question
    (:func:`standalone_question`) and the titles of the documents its answer cited."""
    return [
        Turn(
            t["question"],
            t["answer"],
            standalone_question(t),
            tuple(t.get("cited_titles") or ()),
        )
        for t in history
    ]


def rules_query(
    message: str, turns: Sequence[Turn], without: Collection[str] = ()
) -> tuple[str, str | None]:
    """The rules' standalone query for a message classified ``follow_up``, and the gate's
    check their rewrite failed (None when it passed or nothing was rewritten).

    A continuation ("Why not?", "Tell me more") is the previous standalone question; a
    rewrite that changes nothing or fails the gate leaves the message as typed, and
    retrieval still sees the topic through the history-aware query (never a glued string:
    the query is the one the page shows). ``without`` switches rules off (measurement).
    """
    # A greeting or a thanks names nothing a follow-up can point to ("Hi there!").
    said = [t for t in turns if not is_no_retrieval(clean(t.question))]
    return gated_rewrite(message, said, without=without)


def standalone_question(turn: HistoryTurn) -> str:
    """The turn's question as it was made standalone, without the previous question that
    an older rules rewrite carried along (which would otherwise nest turn after turn:
    "Tell me more (What about that? (Can you elaborate? (...)))"), and without the
    pleasantries before it ("OK thanks. Now, ")."""
    question = turn["question"].strip()
    query = (turn["contextualized_query"] or question).strip()
    carried = f"{question} ("
    if query.startswith(carried) and query.endswith(")"):
        query = query[len(carried) : -1]
    return split_pleasantries(query)[1]
