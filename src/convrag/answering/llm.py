"""The LLM's answer: the prompt's messages, streaming, and recognising its "not found"."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage

from convrag import prompts
from convrag.answering.guard import for_the_prompt
from convrag.citations import strip_markers
from convrag.records import HistoryTurn, Source
from convrag.text.tokens import storable


def build_messages(
    question: str,
    rewritten: str,
    sources: Sequence[Source],
    history: Sequence[HistoryTurn],
    excluded_entities: Sequence[str],
    fence: prompts.Fence,
    no_answer: str,
) -> list[SystemMessage | HumanMessage]:
    """The answer prompt: sources and earlier turns go in as fenced, neutralised data, the
    sources without what addresses the model (:func:`for_the_prompt`); the model is told
    to reply ``no_answer`` alone when the sources do not hold the answer."""
    standalone = f"(Standalone form: {rewritten})\n" if rewritten and rewritten != question else ""
    exclusions = (
        prompts.EXCLUSIONS.format(entities=", ".join(excluded_entities))
        if excluded_entities
        else ""
    )
    user = prompts.SYNTHESIS_USER.format(
        conversation=prompts.conversation_context(history, fence),
        question=question,
        standalone=standalone,
        sources=prompts.format_sources(for_the_prompt(sources), fence),
        exclusions=exclusions,
    )
    system = prompts.SYNTHESIS_SYSTEM.format(
        boundary=fence.boundary, canary=fence.canary, no_answer=no_answer
    )
    return [SystemMessage(system), HumanMessage(user)]


def says_not_found(answer: str, no_answer: str) -> bool:
    """Whether the LLM's ``answer`` is the "not found" sentence it was told to reply alone
    (:func:`build_messages`): compared without case, markers, quotes and the closing
    punctuation. An answer that goes on after the sentence answers something, so it is
    not "not found"."""

    def bare(text: str) -> str:
        return " ".join(strip_markers(text).split()).strip(" \"'“”.!").lower()

    return bool(bare(no_answer)) and bare(answer) == bare(no_answer)


async def llm_answer(
    model: BaseChatModel,
    messages: Sequence[Any],
    *,
    on_token: Callable[[str], None],
    tools: Sequence[Any] = (),
) -> AIMessage:
    """Stream an answer; every content token goes to ``on_token``. Returns the full message
    (which may hold ``tool_calls`` when tools were bound). Text the database cannot store
    (NUL, lone surrogates) is dropped from the tokens and the message alike."""
    runnable: Any = model.bind_tools(list(tools)) if tools else model
    full: AIMessageChunk | None = None
    async for chunk in runnable.astream(list(messages), config={"tags": ["answer"]}):
        if not isinstance(chunk, AIMessageChunk):
            continue
        text = storable(chunk.content) if isinstance(chunk.content, str) else ""
        if text:
            on_token(text)
        full = chunk if full is None else full + chunk
    if full is None:
        return AIMessage(content="")
    content = storable(full.content) if isinstance(full.content, str) else full.content
    return AIMessage(content=content, tool_calls=full.tool_calls)
