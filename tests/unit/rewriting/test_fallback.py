"""The LLM with the rules behind it: which strategy answers, and what a fallback says."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from convrag.records import HistoryTurn
from convrag.rewriting.fallback import FallbackRewriter
from convrag.rewriting.rewriter import Rewrite, RewriteFailed
from convrag.rewriting.rules import RulesRewriter

from .conftest import STORED_SALARY

FOLLOW_UP = "What about her basic salary?"


@dataclass
class _Llm:
    """A strategy that answers ``result`` or fails with ``why``, and counts its calls."""

    result: Rewrite | None = None
    why: str = "timeout"
    calls: list[str] = field(default_factory=list)

    async def rewrite(self, message: str, history: Sequence[HistoryTurn]) -> Rewrite:
        self.calls.append(message)
        if self.result is None:
            raise RewriteFailed(self.why, 12.5)
        return self.result


async def test_first_turns_and_chit_chat_are_the_rules_and_cost_no_call() -> None:
    llm = _Llm()
    rewriter = FallbackRewriter(llm, RulesRewriter())
    first = await rewriter.rewrite(FOLLOW_UP, [])
    thanks = await rewriter.rewrite("Thanks!", STORED_SALARY)
    assert (first.classification, first.method) == ("standalone", "unchanged")
    assert (thanks.classification, thanks.method) == ("no_retrieval", "unchanged")
    assert llm.calls == []


async def test_the_llms_rewrite_is_used_when_it_has_one() -> None:
    answer = Rewrite("follow_up", "What is Prasad Chaudhari's basic salary?", "llm", llm_ms=3.0)
    out = await FallbackRewriter(_Llm(answer), RulesRewriter()).rewrite(FOLLOW_UP, STORED_SALARY)
    assert out == answer


async def test_a_failed_llm_gets_the_rules_rewrite_and_says_why() -> None:
    out = await FallbackRewriter(_Llm(why="invalid: too long"), RulesRewriter()).rewrite(
        FOLLOW_UP, STORED_SALARY
    )
    assert out == Rewrite(
        "follow_up",
        "What about Prasad Chaudhari's basic salary?",
        "fallback",
        fallback="invalid: too long",
        llm_ms=12.5,
    )
