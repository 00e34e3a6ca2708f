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
