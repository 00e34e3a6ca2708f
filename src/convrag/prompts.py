"""Prompts: the follow-up rewrite, and the conversation-aware answer that cites ``[n]``
and does not repeat what earlier answers already said.
"""

from __future__ import annotations

from collections.abc import Sequence

from convrag.records import HistoryTurn, Source

REWRITE_PROMPT = """Given the following conversation history, rewrite the latest user question \
to be fully self-contained and standalone.

Conversation history:
{history}

Latest user question: {question}

Rewrite this as a standalone question that includes necessary context; resolve pronouns \
(her, his, it, they) and references ("that", "the other one").
Output ONLY the rewritten question, nothing else.

Rewritten standalone question:"""

SYNTHESIS_SYSTEM = """You are convrag, an assistant that answers questions about the user's \
workspace documents.

IMPORTANT CONVERSATION RULES:
1. Review the conversation context before answering
2. DO NOT repeat information you've already provided
3. Build on previous answers progressively
4. If asked a follow-up, focus on NEW information
5. If you've already named specific people/companies, provide DIFFERENT examples
6. Reference previous answers when relevant ("As I mentioned earlier...")

CITATIONS: support every claim with inline markers [1], [2], ... that refer to the \
numbered sources below. Only cite numbers that exist. If the sources do not contain the \
answer, say so plainly."""

SYNTHESIS_USER = """CONVERSATION CONTEXT:
{conversation}

CURRENT QUESTION:
{question}
{standalone}
RETRIEVED INFORMATION:
{sources}
{exclusions}
Provide an answer that acknowledges the conversation context, avoids repeating previous \
information, gives new specific details, and cites sources inline as [n]."""

EXCLUSIONS = """
CRITICAL: You have already mentioned these in previous answers:
{entities}

DO NOT mention them again. Provide completely NEW examples and information.
"""


def format_history(history: Sequence[HistoryTurn], *, answer_chars: int = 300) -> str:
    lines: list[str] = []
    for turn in history:
        lines.append(f"User: {turn['question']}")
        lines.append(f"Assistant: {turn['answer'][:answer_chars]}")
    return "\n".join(lines)


def format_sources(sources: Sequence[Source], *, chars: int = 1200) -> str:
    if not sources:
        return "(no sources found)"
    blocks = []
    for n, src in enumerate(sources, start=1):
        head = src["title"] or src["source_type"]
        if src["url"]:
            head += f" <{src['url']}>"
        blocks.append(f"[{n}] {head}\n{src['text'][:chars]}")
    return "\n\n".join(blocks)


def conversation_context(history: Sequence[HistoryTurn]) -> str:
    if not history:
        return "This is the start of a new conversation."
    return "\n\n".join(
        f"Previous Q: {t['question']}\nPrevious A: {t['answer'][:200]}" for t in history[-2:]
    )
