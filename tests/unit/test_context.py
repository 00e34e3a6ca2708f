"""The run's knobs: ``Context.parse_overrides``, which the evaluations' ``--set`` uses, and
contexts built from a mapping (the SDK's JSON), checked knob by knob."""

from __future__ import annotations

import re

import pytest

from convrag.context import Context


def test_overrides_are_read_as_each_knobs_type() -> None:
    knobs = Context.parse_overrides(
        ["feedback_weight=0.2", "max_regenerations=1", "rag_enabled=false", "llm_model=none"]
    )
    assert knobs == {
        "policy": {"feedback_weight": 0.2},
        "max_regenerations": 1,
        "rag_enabled": False,
        "llm_model": "none",
    }
    assert isinstance(knobs["max_regenerations"], int)


@pytest.mark.parametrize(
    ("pair", "problem"),
    [
        ("feedback_weight", "expected NAME=VALUE"),
        ("feedbackweight=0.2", "not a context knob; one of anchor_weight"),
        ("workspace_id=other", "not a context knob"),
        ("services=x", "not a context knob"),
        ("feedback_weight=high", "feedback_weight=high: expected float"),
        ("rag_enabled=maybe", "expected true or false"),
        ("feedback_weight=3", "feedback_weight must be within [0, 2]"),
        ("top_k=0", "top_k must be >= 1"),
    ],
)
def test_a_bad_override_names_the_problem(pair: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        Context.parse_overrides([pair])


def test_a_context_from_json_reads_plain_strings_as_their_knobs_type() -> None:
    ctx = Context.from_mapping(
        {
            "rag_enabled": "false",
            "top_k": "3",
            "score_threshold": "0.2",
            "policy": {"feedback_weight": 1},
        }
    )
    assert ctx.rag_enabled is False
    assert ctx.top_k == 3 and isinstance(ctx.top_k, int)
    assert ctx.score_threshold == 0.2
    assert ctx.policy == {"feedback_weight": 1.0}
    assert isinstance(ctx.policy["feedback_weight"], float)
    # LangGraph builds a run's context from the SDK's JSON as keyword arguments.
    assert Context(**{"rag_enabled": "0"}).rag_enabled is False  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("knobs", "problem"),
    [
        ({"rag_enabled": "maybe"}, "rag_enabled: expected true or false, got the string 'maybe'"),
        ({"top_k": "three"}, "top_k: expected int, got the string 'three'"),
        ({"top_k": 2.5}, "top_k: expected int, got 2.5"),
        ({"top_k": True}, "top_k: expected int, got True"),
        ({"top_k": None}, "top_k: expected int, got null"),
        ({"llm_model": 3}, "llm_model: expected str or null, got 3"),
        ({"web_search": "always"}, "web_search: expected one of 'auto', 'on', 'off'"),
        ({"policy": {"history_weight": [0.2]}}, "policy: history_weight: expected float"),
        ({"policy": 0.4}, "policy: expected an object, got 0.4"),
        ({"topk": 3}, "unknown key 'topk'; the knobs are answer_sentences"),
        ({"services": None}, "unknown key 'services'"),
    ],
)
def test_a_context_value_of_the_wrong_type_is_refused_naming_the_knob(
    knobs: dict[str, object], problem: str
) -> None:
    with pytest.raises(ValueError, match="invalid context: " + re.escape(problem)):
        Context.from_mapping(knobs)


def test_every_knob_of_the_wrong_type_is_named_at_once() -> None:
    with pytest.raises(ValueError) as caught:
        Context(top_k="x", rag_enabled=2)  # type: ignore[arg-type]
    assert "rag_enabled: expected true or false, got 2" in str(caught.value)
    assert "top_k: expected int, got the string 'x'" in str(caught.value)


def test_both_schemas_studio_asks_for_build_and_leave_the_services_out() -> None:
    """``langgraph dev``'s ``/schemas`` asks for the context's JSON schema and the older
    config schema; the latter failed on the services' protocol-typed fields (a warning
    logged on every call). Both list the knobs, and neither the services."""
    import warnings

    from convrag.graph import build_graph

    graph = build_graph().compile()
    context = graph.get_context_jsonschema()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        config = graph.get_config_jsonschema()
    assert context is not None and "workspace_id" in context["properties"]
    assert "services" not in context["properties"]
    knobs = config["$defs"]["Context"]["properties"]
    assert "workspace_id" in knobs and "services" not in knobs
