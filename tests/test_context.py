"""The run's knobs: ``Context.parse_overrides``, which the evaluations' ``--set`` uses."""

from __future__ import annotations

import pytest

from convrag.context import Context


def test_overrides_are_read_as_each_knobs_type() -> None:
    knobs = Context.parse_overrides(
        ["feedback_weight=0.2", "max_regenerations=1", "rag_enabled=false", "llm_model=none"]
    )
    assert knobs == {
        "feedback_weight": 0.2,
        "max_regenerations": 1,
        "rag_enabled": False,
        "llm_model": "none",
    }
    assert isinstance(knobs["max_regenerations"], int)


@pytest.mark.parametrize(
    ("pair", "problem"),
    [
        ("feedback_weight", "expected NAME=VALUE"),
        ("feedbackweight=0.2", "not a context knob; one of anchor_boost"),
        ("workspace_id=other", "not a context knob"),
        ("services=x", "not a context knob"),
        ("feedback_weight=high", "feedback_weight=high: expected float"),
        ("rag_enabled=maybe", "expected true or false"),
        ("feedback_weight=3", "feedback_weight must be within [0, 2]"),
    ],
)
def test_a_bad_override_names_the_problem(pair: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        Context.parse_overrides([pair])
