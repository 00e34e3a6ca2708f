"""The state's shared definitions."""

from __future__ import annotations

from typing import Any

import pytest

from convrag.state import repetition_detected


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        ({}, False),
        ({"regenerations": 0, "repetition": {"is_repetitive": False}}, False),
        ({"regenerations": 1, "repetition": {"is_repetitive": False}}, True),
        # No regeneration was allowed (max_regenerations 0): the repetition still counts.
        ({"regenerations": 0, "repetition": {"is_repetitive": True}}, True),
    ],
)
def test_repetition_counts_when_regenerated_or_left_unresolved(
    state: dict[str, Any], expected: bool
) -> None:
    assert repetition_detected(state) is expected


def test_the_graph_gives_studio_its_input_and_output_schemas() -> None:
    """On Python 3.11 pydantic builds a TypedDict's schema only from typing_extensions'
    TypedDict; with typing's, LangGraph Studio gets no input form."""
    from convrag.graph import compile_graph

    graph = compile_graph()
    assert set(graph.get_input_jsonschema()["properties"]) >= {"message", "conversation_id"}
    assert "answer" in graph.get_output_jsonschema()["properties"]
