"""Whether a follow-up stays on the conversation's focus: a fitted decision over cheap
signals, which scales how much the previous answer's documents (the anchor list) weigh.

The focus is what the previous turn was about: its question, its answer and the titles of
the documents the answer cited (those documents are the turn's anchors). A follow-up that
brings no subject of its own ("Why isn't that turned on by default?") is searched with the
anchors as a strong prior; one that names a new subject, in words the focus does not hold
and the workspace seldom uses, leaves it. The decision is a logistic model
(``focus_model`` in the retrieval policy, written by ``benchmarks/fit_focus.py``) over
:func:`focus_features`; the anchor list's weight is the policy's ``anchor_weight`` times
its probability. An empty model keeps the anchor weight as it is.
"""

from __future__ import annotations

from collections.abc import Mapping

from convrag.retrieval.evidence import logistic
from convrag.retrieval.planning import TurnQuery
from convrag.retrieval.search import HybridSearcher
from convrag.text.tokens import content_terms

FOCUS_FEATURES = ("new_rarity", "new_words", "own_words", "shared_words", "rewritten")
"""The signals the focus model may weigh (:func:`focus_features`)."""


def focus_text(turn: TurnQuery) -> str:
    """The previous turn's question (as rewritten then), answer and cited titles."""
    if not turn.history:
        return ""
    last = turn.history[-1]
    parts = [
        last.get("contextualized_query") or last["question"],
        last["answer"],
        *last.get("cited_titles", []),
    ]
    return "\n".join(p for p in parts if p)


def focus_features(turn: TurnQuery, searcher: HybridSearcher) -> dict[str, float]:
    """The follow-up's signals against the focus: the workspace rarity (IDF) of its rarest
    word the focus does not hold (0 when it holds them all), how many of its content words
    are new and how many it has at all and shares with the focus, and whether the rewrite
    changed it (a pronoun or an elided subject was resolved against the history)."""
    focus = focus_text(turn)
    own = content_terms(turn.message)
    held = content_terms(focus)
    return {
        "new_rarity": searcher.rarest_missing_term(
            turn.workspace_id, turn.message, [focus], typed=turn.message
        ),
        "new_words": float(len(own - held)),
        "own_words": float(len(own)),
        "shared_words": float(len(own & held)),
        "rewritten": float(content_terms(turn.query) != own),
    }


def stays_on_focus(turn: TurnQuery, searcher: HybridSearcher, model: Mapping[str, float]) -> float:
    """The probability that the follow-up is about the previous answer's documents
    (1.0 with no model, or on a turn without anchors)."""
    if not model or not turn.follow_up or not turn.anchor_document_ids:
        return 1.0
    return logistic(focus_features(turn, searcher), model)
