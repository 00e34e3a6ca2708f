"""The fixed replies: nothing found, retrieval off, chit-chat, and the no-LLM reformatting
of the previous answer."""

from __future__ import annotations

import re
from collections.abc import Sequence

from convrag.records import HistoryTurn
from convrag.text.units import sentences

NO_SOURCES_ANSWER = (
    "I could not find anything about this in the workspace's documents. "
    "Try rephrasing, or ingest documents that cover it."
)
RAG_OFF_ANSWER = (
    "Retrieval is off for this message (rag.enabled is false), and with no language model "
    "configured there is nothing to answer from: turn retrieval on, or configure an LLM."
)
NOT_ANSWERED = frozenset({NO_SOURCES_ANSWER, RAG_OFF_ANSWER})
"""The no-LLM answers that say nothing was found: the turn carries ``no_answer``."""
GREETING_ANSWER = "Hello! Ask me anything about the documents in this workspace."
THANKS_ANSWER = "You're welcome! Ask me anything else about the documents in this workspace."
GOODBYE_ANSWER = "Goodbye! Come back any time with a question about the workspace's documents."
CHIT_CHAT_ANSWERS = frozenset({GREETING_ANSWER, THANKS_ANSWER, GOODBYE_ANSWER})
"""The fixed replies to chit-chat: the same each time by design, never a repetition."""

_THANKS = re.compile(r"\b(?:thanks?|thank\s+you|thx|ty|cheers|appreciate)\b", re.IGNORECASE)
_GOODBYE = re.compile(r"\b(?:bye|goodbye|see\s+you|good\s+night|farewell)\b", re.IGNORECASE)


def chit_chat_answer(message: str) -> str:
    """The fixed reply to a message that asks nothing: thanks, a goodbye, or a greeting."""
    if _GOODBYE.search(message):
        return GOODBYE_ANSWER
    if _THANKS.search(message):
        return THANKS_ANSWER
    return GREETING_ANSWER


def reformat_previous(message: str, history: Sequence[HistoryTurn]) -> str:
    """No-LLM handling of "format that as a table" / "make it shorter" requests."""
    if not history:
        return "There is no earlier answer to reformat yet; ask a question first."
    previous = history[-1]["answer"]
    parts = sentences(previous)
    lowered = message.lower()
    if "table" in lowered:
        rows = "\n".join(f"| {i} | {p.replace('|', '/')} |" for i, p in enumerate(parts, 1))
        return f"| # | point |\n|---|---|\n{rows}"
    if any(w in lowered for w in ("short", "brief", "summar", "tl;dr", "concise")):
        return parts[0] if parts else previous
    if any(w in lowered for w in ("list", "bullet", "points")):
        return "\n".join(f"- {p}" for p in parts)
    return previous
