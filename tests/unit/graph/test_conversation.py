"""The conversation settings' own checks, without the graph running a turn."""

from __future__ import annotations

import pytest

from convrag.context import Context


def test_answer_sentences_must_be_at_least_one() -> None:
    with pytest.raises(ValueError, match="answer_sentences must be >= 1"):
        Context(answer_sentences=0)
