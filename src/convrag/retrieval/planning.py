"""What a turn searches: its queries, each with the weight of its list.

A first turn searches its message; a turn the rules call standalone, its message with the
previous question mixed into the dense query. A follow-up searches up to three queries
and fuses their lists: the rewrite, the raw message as typed, and the history query (the
message with the words of the conversation a fitted model chooses, or with the previous
question); one that an LLM rewrote searches its rewrite and
the raw message. The raw message is always one of a follow-up's queries (when it has a
word to search), so a garbled rewrite can push its hits down but not out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from convrag.records import HistoryTurn, previous_question
from convrag.retrieval.expansion import expansion_terms
from convrag.retrieval.policy import RetrievalPolicy
from convrag.rewriting.gate import is_continuation
from convrag.state import State
from convrag.text.tokens import content_words, tokenize


@dataclass(frozen=True, slots=True)
class TurnQuery:
    """What the wing needs to know of a turn to search for it."""

    workspace_id: str
    message: str
    """The message as typed."""
    query: str
    """The standalone query (the rewrite, or the message)."""
    classification: str | None
    method: str | None
    """How the query was written: ``rules``, ``llm``, ``fallback``..."""
    history: Sequence[HistoryTurn]
    anchor_document_ids: Sequence[str] = ()
    """The documents the previous answer cited."""

    @classmethod
    def of(cls, state: State) -> TurnQuery:
        message = state["question"]
        return cls(
            workspace_id=state["workspace_id"],
            message=message,
            query=state.get("rewritten_query") or message,
            classification=state.get("classification"),
            method=state.get("rewrite_method"),
            history=state.get("history") or [],
            anchor_document_ids=state.get("anchor_document_ids") or [],
        )

    @property
    def previous(self) -> str | None:
        """The previous standalone question, or None on a first turn."""
        return previous_question(self.history)

    @property
    def follow_up(self) -> bool:
        return self.classification == "follow_up"

    @property
    def kind(self) -> TurnKind:
        """Which row of :data:`PLANS` the turn searches by."""
        if not self.history:
            return "first_turn"
        if not self.follow_up:
            return "standalone"
        return "llm_follow_up" if self.method == "llm" else "follow_up"


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    """One query of a turn: its text, whether its dense query mixes in the previous
    question, and the weight of its list."""

    name: str
    text: str
    mixed: bool
    weight: float


TurnKind = Literal["first_turn", "standalone", "follow_up", "llm_follow_up"]

PLANS: dict[TurnKind, tuple[str, ...]] = {
    "first_turn": ("raw",),
    "standalone": ("message",),
    "follow_up": ("rewrite", "raw", "history"),
    "llm_follow_up": ("rewrite", "raw"),
}
"""The lists each kind of turn searches. ``rewrite``: the standalone query, only when it
differs from the message; ``raw``: the message as typed; ``history``: the message and the
previous question as one query (its keywords keep the topic a bare follow-up lacks);
``message``: the message alone. All but ``raw`` mix the previous question's vector into
the dense query (``history_weight``). A turn the rules call standalone searches its one
query, or adds the raw list (``standalone_raw_query``); a first turn has nothing to mix.
A follow-up that an LLM rewrote has no history list: its rewrite already names the
conversation's topic."""


def plan_queries(turn: TurnQuery, policy: RetrievalPolicy) -> list[PlannedQuery]:
    """The queries a turn searches (:data:`PLANS`), the one whose words it shows first.

    The raw list needs a content word and more than a continuation ("Why?", "Can you
    elaborate?": the rewrite, the previous question, carries the topic); the history list
    does not, its previous question carries the topic. Lists of weight 0 are left out, but
    never all of them: the first stays, at 1.
    """
    kind, message, query = turn.kind, turn.message, turn.query
    weights = {
        "rewrite": policy.llm_rewrite_query_weight
        if kind == "llm_follow_up"
        else policy.rewrite_query_weight,
        "raw": policy.raw_query_weight,
        "history": policy.history_query_weight,
        "message": policy.history_query_weight,
    }
    texts = {"rewrite": query, "raw": message, "message": message}
    texts["history"] = history_query(turn, policy)
    rewritten = _words(query) != _words(message)
    wordy = bool(content_words(tokenize(message))) and not is_continuation(message)
    names = PLANS[kind]
    if kind == "standalone" and policy.standalone_raw_query:
        names = ("raw", "message")
    planned = [
        PlannedQuery(name, texts[name], name != "raw", weights[name])
        for name in names
        if {"rewrite": rewritten, "raw": wordy or not rewritten}.get(name, True)
    ]
    if len(planned) == 1 or kind == "first_turn":
        return [replace(planned[0], text=query, weight=1.0)]
    kept = [q for q in planned if q.weight > 0]
    return kept or [replace(planned[0], weight=1.0)]


def history_query(turn: TurnQuery, policy: RetrievalPolicy) -> str:
    """A follow-up's history query: the message and the history terms the expansion
    model chooses (:mod:`convrag.retrieval.expansion`), or the message and the previous
    question when the policy has no such model."""
    message, previous = turn.message, turn.previous
    if policy.expansion_model and turn.history:
        terms = expansion_terms(
            message, turn.history, policy.expansion_model, policy.expansion_terms
        )
        return " ".join([message.strip(), *terms])
    return f"{message.strip()} {previous}" if previous else message


def _words(text: str) -> list[str]:
    return [t.low for t in tokenize(text) if t.kind != "punct"]


def evidence_queries(turn: TurnQuery) -> list[str]:
    """The queries a turn's evidence is weighed for: its standalone query, and for a
    follow-up the rules left as typed ("Which is the most popular?") the message with
    the previous question too, as it was searched (its history query). Either finding
    evidence is enough: on its own words alone, a follow-up may name no topic, and the
    previous question may be about another part of the documents."""
    previous = turn.previous
    if turn.follow_up and previous and turn.query.strip() == turn.message.strip():
        return [turn.query, f"{turn.message.strip()} {previous}"]
    return [turn.query]
