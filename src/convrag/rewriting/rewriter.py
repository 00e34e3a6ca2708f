"""One interface for making a message standalone: :class:`QueryRewriter`.

Each strategy classifies a message against the conversation so far and returns one
:class:`Rewrite`: the rules (:class:`~convrag.rewriting.rules.RulesRewriter`, the
deterministic contextualizer and its gate), the LLM (:class:`~convrag.rewriting.llm.LlmRewriter`,
one JSON call) and the LLM with the rules behind it
(:class:`~convrag.rewriting.fallback.FallbackRewriter`). The rewrite node picks one from the
run's context and writes what it returns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from convrag.records import HistoryTurn
from convrag.rewriting.classify import Classification
from convrag.state import RewriteMethod


@dataclass(frozen=True, slots=True)
class Rewrite:
    """How a message is classified and the query retrieval searches for it."""

    classification: Classification
    query: str
    """The standalone query; the message as typed when nothing was rewritten."""
    method: RewriteMethod
    """``rules`` or ``llm`` when that strategy rewrote the message, ``fallback`` when the
    LLM failed and the rules answered, ``unchanged`` when the rules left it as typed."""
    rejected: str | None = None
    """The gate's check the rules' rewrite failed (the message was kept), if any."""
    fallback: str | None = None
    """Why the LLM's reply was not used (``timeout``, ``invalid: too long``, ...), if so."""
    llm_ms: float | None = None
    """The model's time when an LLM was called (counted apart from the service's own)."""


class QueryRewriter(Protocol):
    """A strategy that classifies a message and makes it standalone."""

    async def rewrite(self, message: str, history: Sequence[HistoryTurn]) -> Rewrite:
        """``message`` classified and rewritten against ``history`` (oldest first)."""
        ...


class RewriteFailed(Exception):
    """A strategy could not rewrite the message: ``why`` says how (the LLM's call failed,
    timed out, or its reply was rejected), ``llm_ms`` how long the model took."""

    def __init__(self, why: str, llm_ms: float) -> None:
        super().__init__(why)
        self.why = why
        self.llm_ms = llm_ms
