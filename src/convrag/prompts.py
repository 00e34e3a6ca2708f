"""Prompts: the rewrite gate (classify the message and make it standalone, as JSON), and
the conversation-aware answer that cites ``[n]`` and does not repeat what earlier answers
already said.
"""

from __future__ import annotations

from collections.abc import Sequence

from convrag.records import HistoryTurn, Source

# One call classifies and rewrites. It asks for a JSON object in the prompt rather than
# through tools or response_format, which not every OpenAI-compatible server supports; the
# rewrite node parses and checks the reply itself.
REWRITE_PROMPT = """You prepare the latest message of a conversation for a document search.

Conversation history:
{history}

Latest user question: {question}

1. Classify the latest message:
- "follow_up": it cannot be understood without the conversation (pronouns such as he, she, \
it, they; references such as "that" or "the other one"; fragments such as "and in 2019?", \
"why?" or "any others?").
- "standalone": it can be understood on its own, including a switch to a new subject.
- "no_retrieval": chit-chat, thanks, a question about you, or a request to reshape your \
previous answer (shorter, as a table, translated): nothing new to look up.

2. Write "query": the latest message as one self-contained question in the user's words, \
with pronouns and references replaced by what they point to in the conversation. Do NOT \
answer it. For "standalone" and "no_retrieval", repeat the message as it is.

Reply with ONLY this JSON object, nothing else:
{{"classification": "follow_up" or "standalone" or "no_retrieval", "query": "..."}}"""

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
