"""synthesize: a conversation-aware answer with ``[n]`` citations; tokens stream.

With an LLM the answer follows seed 002's rules (do not repeat, build on earlier answers)
and may call the ``google_search`` tool once. Without one, or when the LLM fails mid-turn,
the extractive answer runs instead (flagged), in the same graph.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from langgraph.runtime import Runtime

from convrag.graph.context import Context
from convrag.graph.state import Draft, State
from convrag.llm import chat_model, resolve_model
from convrag.nodes._util import emit, ms_since
from convrag.rewriting.contextualizer import extract_entities
from convrag.services import get_services
from convrag.synthesis import (
    GREETING_ANSWER,
    build_messages,
    extractive_answer,
    has_marker,
    llm_answer,
    reformat_previous,
)

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


async def compose_answer(
    state: State,
    runtime: Runtime[Context],
    excluded: Sequence[str],
    node: str,
    on_start: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """One draft for the current sources; shared by synthesize and regenerate.

    ``on_start`` runs right before the draft's first token streams. An extractive
    regeneration that finds nothing new streams nothing (the earlier draft stands).
    """
    start = time.perf_counter()
    ctx = runtime.context
    services = await get_services()
    history = state.get("history") or []
    sources = state.get("sources") or []
    question = state["message"]
    rewritten = state.get("rewritten_query") or question
    model_name = resolve_model(ctx.llm_model, services.settings)
    flags: dict[str, Any] = {}
    errors: dict[str, str] = {}
    update: dict[str, Any] = {}
    text: str | None = None
    if model_name is not None:
        model = chat_model(
            model_name,
            services.settings,
            temperature=ctx.answer_temperature,
            timeout=ctx.answer_timeout_s,
        )
        tools = []
        if (
            services.web is not None
            and ctx.web_search != "off"
            and not state.get("web_search_done")
        ):
            tools = [services.web.as_tool()]
        streamed: list[str] = []

        def on_token(token: str) -> None:
            streamed.append(token)
            emit(runtime, "token", text=token, node=node)

        if on_start is not None:
            on_start()
        try:
            async with asyncio.timeout(ctx.answer_timeout_s):
                reply = await llm_answer(
                    model,
                    build_messages(question, rewritten, sources, history, excluded),
                    on_token=on_token,
                    tools=tools,
                )
            call = next((c for c in reply.tool_calls if c["name"] == "google_search"), None)
            if call is not None and tools:
                query = str(call["args"].get("query") or rewritten)
                return {"pending_web_query": query, "timings": {node: ms_since(start)}}
            content = reply.content if isinstance(reply.content, str) else ""
            if content.strip():
                text = content
            else:
                errors[node] = "empty answer"
        except TimeoutError:
            errors[node] = "timeout"
        except Exception as exc:  # the LLM failed mid-turn: answer extractively instead
            errors[node] = f"{type(exc).__name__}: {exc}"[:300]
        if text is None:
            flags["extractive_fallback"] = errors[node]
            if streamed:
                emit(runtime, "reset", reason="llm_failed", node=node)
    if text is None:
        text = _no_llm_answer(state, rewritten, excluded)
        nothing_new = node == "regenerate" and sources and not has_marker(text)
        if not nothing_new:
            if on_start is not None and model_name is None:
                on_start()
            for piece in _chunks(text):
                emit(runtime, "token", text=piece, node=node)
    entities = extract_entities(text)
    drafts = [
        *state.get("drafts", []),
        Draft(answer=text, overlap_ratio=0.0, extractive=model_name is None or bool(flags)),
    ]
    update.update(
        {
            "draft": text,
            "drafts": drafts,
            "entities": entities,
            "pending_web_query": None,
            "flags": flags,
            "errors": errors,
            "timings": {node: ms_since(start)},
        }
    )
    return update


def _no_llm_answer(state: State, rewritten: str, excluded: Sequence[str]) -> str:
    history = state.get("history") or []
    if state.get("classification") == "no_retrieval":
        lowered = state["message"].lower()
        if history and any(w in lowered for w in _REFORMAT_WORDS):
            return reformat_previous(state["message"], history)
        return GREETING_ANSWER
    return extractive_answer(
        rewritten, state.get("sources") or [], history=history, excluded_entities=excluded
    )


def _chunks(text: str, size: int = 24) -> list[str]:
    """Split an extractive answer into word-aligned pieces so it streams like tokens."""
    words = text.split(" ")
    out, cur = [], ""
    for w in words:
        cur = f"{cur} {w}" if cur else w
        if len(cur) >= size:
            out.append(cur + " ")
            cur = ""
    if cur:
        out.append(cur)
    return out


async def synthesize(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    return await compose_answer(state, runtime, state.get("excluded_entities") or [], "synthesize")
