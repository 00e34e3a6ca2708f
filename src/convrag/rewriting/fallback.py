"""The LLM with the rules behind it: what runs when an LLM is configured.

A first turn has nothing to resolve and chit-chat ("thanks!", "make it shorter") nothing to
look up: the rules settle both, and the model is not called. Every later turn goes to the
LLM; a call that fails, times out or whose reply is rejected gets what the no-LLM path
gives (the rules' classification and, for a follow-up, their rewrite), as ``fallback``
and with why: a failing LLM must not resolve follow-ups worse than no LLM at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from convrag.records import HistoryTurn
from convrag.rewriting.classify import is_no_retrieval
from convrag.rewriting.rewriter import QueryRewriter, Rewrite, RewriteFailed
from convrag.text.tokens import clean


@dataclass(frozen=True, slots=True)
class FallbackRewriter:
    """Ask ``llm``; when it fails, ``rules`` answer instead."""

    llm: QueryRewriter
    rules: QueryRewriter

    async def rewrite(self, message: str, history: Sequence[HistoryTurn]) -> Rewrite:
        """The LLM's rewrite of a later turn, else the rules' (``method`` ``fallback``,
        ``fallback`` saying why the LLM's was not used)."""
        if not history or is_no_retrieval(clean(message)):
            return await self.rules.rewrite(message, history)
        try:
            return await self.llm.rewrite(message, history)
        except RewriteFailed as failed:
            kept = await self.rules.rewrite(message, history)
            return replace(kept, method="fallback", fallback=failed.why, llm_ms=failed.llm_ms)
