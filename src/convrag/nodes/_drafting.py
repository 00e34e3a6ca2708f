"""What ``synthesize`` and ``regenerate`` share: one draft from the LLM or the sources.

Two ways to draft, one contract (a text with inline ``[n]`` markers over the sources):
the LLM, streamed token by token and allowed one ``google_search`` call; or, without an
LLM or when it fails mid-turn, the extractive answer (flagged as a fallback).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from convrag.answering.guard import StreamGuard, without_instructions
from convrag.answering.llm import build_messages, llm_answer
from convrag.answering.replies import (
    NO_SOURCES_ANSWER,
    RAG_OFF_ANSWER,
    chit_chat_answer,
    reformat_previous,
)
from convrag.citations import has_marker, strip_markers
from convrag.context import Context
from convrag.embeddings import cosine_to_query
from convrag.events import ResetEvent, TokenEvent, emit
from convrag.llm import attempt, chat_model
from convrag.prompts import Fence, own_text
from convrag.retrieval.planning import TurnQuery, evidence_queries
from convrag.retrieval.quoting import answer_length, extractive_answer
from convrag.retrieval.ranking import query_coverage
from convrag.state import Draft, DraftUpdate, State
from convrag.text.entities import extract_entities
from convrag.text.tokens import storable

_REFORMAT_WORDS = (
    "table",
    "format",
    "shorter",
    "short",
    "brief",
    "summar",
    "bullet",
    "list",
    "rewrite",
    "rephrase",
    "translate",
    "concise",
)


LEAKED_CANARY = "the answer leaked the system prompt's canary"
RECITED_PROMPT = "the answer recited the system prompt"
OBEYED_SOURCE = "the answer followed an instruction found in a source"
REFUSED = frozenset({LEAKED_CANARY, RECITED_PROMPT, OBEYED_SOURCE})
"""Why an LLM answer was refused as a hijack (:mod:`convrag.answering.guard`): the turn
answers from the sources instead, and its ``answer_refused`` flag says why."""


@dataclass(frozen=True)
class LlmDraft:
    """What one LLM call gave: a text, a web search to run first, or a failure."""

    text: str | None = None
    web_query: str | None = None
    failure: str | None = None


async def llm_draft(
    state: State, runtime: Runtime[Context], model_name: str, excluded: Sequence[str], node: str
) -> LlmDraft:
    """Stream the LLM's answer as ``token`` events, as far as the output checks accept it
    (:class:`~convrag.answering.guard.StreamGuard`); a failure after tokens sends
    ``reset``, which takes back only text the checks had passed."""
    ctx = runtime.context
    services = ctx.deps
    tools = []
    if services.web is not None and ctx.web_search != "off" and not state.get("web_search_done"):
        tools = [services.web.as_tool()]
    question = state["question"]
    rewritten = state.get("rewritten_query") or question
    fence = Fence.new()
    history = state.get("history") or []
    no_answer = services.settings.no_answer_text
    trusted = "\n".join([no_answer, *(f"{t['question']}\n{t['answer']}" for t in history)])
    # Tokens go out only once the output checks pass on the answer so far: a hijacked
    # answer is refused before any of it streams.
    guard = StreamGuard(
        state.get("sources") or [], question, fence.canary, prompt=own_text(), trusted=trusted
    )

    def send(text: str) -> None:
        if text:
            emit(runtime, TokenEvent(event="token", text=text, node=node))

    def on_token(token: str) -> None:
        send(guard.feed(token))

    messages = build_messages(
        question,
        rewritten,
        state.get("sources") or [],
        history,
        excluded,
        fence,
        no_answer,
    )

    async def call() -> AIMessage:
        model = chat_model(
            model_name,
            services.settings,
            temperature=ctx.answer_temperature,
            timeout=ctx.answer_timeout_s,
        )
        return await llm_answer(model, messages, on_token=on_token, tools=tools)

    reply, failure = await attempt(call(), ctx.answer_timeout_s, what="the answer LLM call")
    if reply is not None:
        send(guard.finish())  # the held tail, if the whole answer passes
        result = _read_reply(reply, state, guard, searches=bool(tools))
        if result.failure is None:
            return result
        failure = result.failure
    if guard.released:
        emit(runtime, ResetEvent(event="reset", reason="llm_failed", node=node))
    return LlmDraft(failure=failure)


_REFUSALS = {"canary": LEAKED_CANARY, "prompt": RECITED_PROMPT, "instruction": OBEYED_SOURCE}


def _read_reply(reply: AIMessage, state: State, guard: StreamGuard, *, searches: bool) -> LlmDraft:
    """What the LLM's ``reply`` gives: a web search to run (when it may ``searches``), an
    answer, or the failure that refuses it (the canary leaked, the prompt recited, a
    source obeyed, empty). A link of the model's making is no refusal: the answer is
    stored without it."""
    tool_call = next((c for c in reply.tool_calls if c["name"] == "google_search"), None)
    question = state["question"]
    if tool_call is not None and searches:
        query = storable(str(tool_call["args"].get("query") or "")).strip()
        return LlmDraft(web_query=query or state.get("rewritten_query") or question)
    content = reply.content if isinstance(reply.content, str) else ""
    failure = guard.verdict(content)
    if failure in _REFUSALS:
        return LlmDraft(failure=_REFUSALS[failure])
    if content.strip():
        return LlmDraft(text=content)
    return LlmDraft(failure="empty answer")


async def extractive_draft(
    state: State, ctx: Context, excluded: Sequence[str], refused: str | None = None
) -> str:
    """The no-LLM answer: a greeting, a reformatted earlier answer, or quoted sentences
    ranked with the embedder (in a thread: it is CPU work), or ``NO_ANSWER_TEXT`` when
    none can be quoted. No source's sentence that addresses the model is quoted; after the
    LLM's answer was ``refused`` (why), no sentence holding an instruction to write
    something either."""
    history = state.get("history") or []
    if state.get("classification") == "no_retrieval":
        lowered = state["question"].lower()
        if history and any(w in lowered for w in _REFORMAT_WORDS):
            return reformat_previous(state["question"], history)
        return chit_chat_answer(state["question"])
    if not ctx.rag_enabled and not state.get("sources"):
        return RAG_OFF_ANSWER
    text = NO_SOURCES_ANSWER
    sources = without_instructions(state.get("sources") or [], refused=refused in REFUSED)
    # A follow-up left as typed ("What is it?") may share no word with any sentence: its
    # history query (the message and the previous question) is asked next, as the "not
    # found" evidence weighs it.
    for query in evidence_queries(TurnQuery.of(state)):
        text = await asyncio.to_thread(
            extractive_answer,
            query,
            sources,
            history=history,
            excluded_entities=excluded,
            max_sentences=answer_length(query, ctx.answer_sentences),
            similarity=cosine_to_query(ctx.deps.sentences),
            policy=ctx.retrieval_policy,
        )
        if text != NO_SOURCES_ANSWER:
            break
    # Nothing to quote is "not found", which NO_ANSWER_TEXT words.
    return ctx.deps.settings.no_answer_text if text == NO_SOURCES_ANSWER else text


def stream_text(runtime: Runtime[Context], text: str, node: str, size: int = 24) -> None:
    """Send an extractive answer as word-aligned ``token`` pieces, so it streams like an LLM."""
    cur = ""
    for word in text.split(" "):
        cur = f"{cur} {word}" if cur else word
        if len(cur) >= size:
            emit(runtime, TokenEvent(event="token", text=cur + " ", node=node))
            cur = ""
    if cur:
        emit(runtime, TokenEvent(event="token", text=cur, node=node))


def drafted(state: State, text: str, *, extractive: bool) -> DraftUpdate:
    """The update that makes ``text`` the current draft (and keeps every earlier one)."""
    query = state.get("rewritten_query") or state["question"]
    drafts = [
        *state.get("drafts", []),
        Draft(
            answer=text,
            overlap_ratio=0.0,
            extractive=extractive,
            relevance=query_coverage(query, strip_markers(text)),
        ),
    ]
    return DraftUpdate(
        draft=text, drafts=drafts, entities=extract_entities(text), pending_web_query=None
    )


def may_replace_first(draft: Draft, first: Draft) -> bool:
    """Whether ``draft`` may stand in for the turn's ``first`` draft.

    It must cite something. An extractive draft must also be at least as relevant to the
    question (cover as many of its terms): quoting other sentences to avoid repeating can
    answer something else. An LLM draft was asked to answer without the repeated
    entities, and its wording need not share the question's terms, so it is trusted.
    """
    if not has_marker(draft["answer"]):
        return False
    return not draft["extractive"] or draft.get("relevance", 0.0) >= first.get("relevance", 0.0)


def fell_back(node: str, failure: str | None) -> DraftUpdate:
    """Flags and errors of an LLM failure answered extractively."""
    reason = failure or "error"
    flags: dict[str, object] = {"extractive_fallback": reason}
    if reason in REFUSED:
        flags["answer_refused"] = reason
    return DraftUpdate(flags=flags, errors={node: reason})
