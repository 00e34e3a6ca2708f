"""merge_context's "not found" decision: the evidence is the closest source sentence."""

from __future__ import annotations

from typing import cast

from convrag.state import State


def test_assurance_is_low_only_within_the_margin_either_side() -> None:
    from convrag.records import assurance_of
    from convrag.retrieval.evidence import assurance

    assert [assurance(e, 0.4, 0.05) for e in (0.3, 0.36, 0.44, 0.5)] == [
        "high",
        "low",
        "low",
        "high",
    ]
    assert assurance(0.4, 0.4, 0.0) == "high"  # a zero margin marks nothing
    assert assurance_of({"low_confidence": True}) == "low" and assurance_of({}) == "high"


def test_a_follow_up_left_as_typed_is_weighed_also_with_the_previous_question() -> None:
    from convrag.retrieval.planning import TurnQuery, evidence_queries

    history = [
        {
            "turn_number": 1,
            "question": "Which sports can women play?",
            "answer": "Football [1].",
            "contextualized_query": "Which sports can women play?",
            "entities": [],
            "cited_document_ids": [],
        }
    ]
    state = {
        "workspace_id": "w",
        "question": "Which is the most popular?",
        "rewritten_query": "Which is the most popular?",
        "classification": "follow_up",
        "history": history,
    }
    assert evidence_queries(TurnQuery.of(cast(State, state))) == [
        "Which is the most popular?",
        "Which is the most popular? Which sports can women play?",
    ]
    rewritten = {**state, "rewritten_query": "Which sport women play is the most popular?"}
    assert evidence_queries(TurnQuery.of(cast(State, rewritten))) == [
        "Which sport women play is the most popular?"
    ]
    standalone = {**state, "classification": "standalone"}
    assert evidence_queries(TurnQuery.of(cast(State, standalone))) == ["Which is the most popular?"]
