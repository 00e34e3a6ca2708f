"""The OpenAI stub's helpers, without serving: token splitting and script rules."""

from __future__ import annotations

import re

import pytest

from convrag.testing.openai_stub import (
    rules_from_script,
    split_tokens,
)


def test_split_tokens_round_trips_text() -> None:
    for text in ["", "  ", "a", " a b  ", "x\n\ny [1]."]:
        assert "".join(split_tokens(text)) == text


def test_script_rules_are_parsed() -> None:
    rules = rules_from_script(
        [
            {"match_regex": "fail", "status": 503, "times": 1},
            {"content": "fallback"},
        ]
    )
    assert isinstance(rules[0][0], re.Pattern) and rules[0][1].status == 503
    assert rules[0][1].times == 1
    assert rules[1][0] is None and rules[1][1].content == "fallback"
    with pytest.raises(ValueError, match="unknown keys"):
        rules_from_script([{"match": "x"}])
