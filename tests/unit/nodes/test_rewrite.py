"""The rewrite node without an LLM server: the rules path, the query checks, and the
fallback when no model can be built."""

from __future__ import annotations

from convrag.config import Settings
from convrag.records import HistoryTurn
from tests.nodes.test_rewrite import FOLLOW_UP, RULES_REWRITE, SALARY, STANDALONE, _run, _turn


async def test_a_model_that_cannot_be_built_falls_back_instead_of_raising(
    settings: Settings,
) -> None:
    out, _ = await _run(FOLLOW_UP, SALARY, settings, None, llm_model="nonexistent:model")
    assert out["rewrite_method"] == "fallback"
    assert out["flags"]["rewrite_fallback"] == "error: ValueError"
    assert out["rewritten_query"] == RULES_REWRITE


# --------------------------------------------------------------------------------------------
# Without an LLM: the rules
# --------------------------------------------------------------------------------------------


async def test_without_an_llm_the_rules_rewrite_a_follow_up(settings: Settings) -> None:
    out, _ = await _run(FOLLOW_UP, SALARY, settings, None)
    assert out["rewrite_method"] == "rules"
    assert "timings" not in out and "flags" not in out
    assert out["rewritten_query"] == RULES_REWRITE


async def test_without_an_llm_a_standalone_turn_is_unchanged(settings: Settings) -> None:
    out, _ = await _run(STANDALONE, SALARY, settings, None)
    assert out["classification"] == "standalone"
    assert (out["rewritten_query"], out["rewrite_method"]) == (STANDALONE, "unchanged")


def _rewritten(question: str, answer: str, query: str, n: int) -> HistoryTurn:
    return {**_turn(question, answer, n), "contextualized_query": query}
