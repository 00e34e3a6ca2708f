"""rewrite: classify the message and turn a follow-up into a standalone query.

With an LLM, the seeds' rewrite prompt at a low temperature and with a timeout; on any
failure (error, timeout, empty output) the original question is kept and the reason
recorded. Without an LLM, the deterministic contextualizer resolves pronouns and
ellipsis from the previous turns.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.messages import HumanMessage
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from convrag import prompts
from convrag.graph.context import Context
from convrag.graph.state import HistoryTurn, State
from convrag.llm import chat_model, resolve_model
from convrag.nodes._util import emit, ms_since
from convrag.rewriting.contextualizer import Turn, classify, contextualize
from convrag.services import get_services

_PREFIXES = (
    "rewritten standalone question:",
    "rewritten question:",
    "standalone question:",
    "question:",
)


def clean_rewrite(text: str) -> str:
    """First non-empty line, without labels or wrapping quotes."""
    line = next((ln.strip() for ln in text.strip().splitlines() if ln.strip()), "")
    lowered = line.lower()
    for prefix in _PREFIXES:
        if lowered.startswith(prefix):
            line = line[len(prefix) :].strip()
            break
    return line.strip("\"'` ").strip()


def rules_rewrite(message: str, history: list[HistoryTurn]) -> str:
    """The deterministic contextualizer; a follow-up it cannot resolve ("Can you elaborate
    more on that?") carries the previous standalone question along, so retrieval still
    sees the topic."""
    turns = [Turn(t["question"], t["answer"]) for t in history]
    query = contextualize(message, turns)
    if query.strip() == message.strip() and history:
        previous = history[-1]["contextualized_query"] or history[-1]["question"]
        query = f"{message.strip()} ({previous.strip()})"
    return query


async def rewrite(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    start = time.perf_counter()
    message = state["message"]
    history = state.get("history") or []
    turns = [Turn(t["question"], t["answer"]) for t in history]
    classification = classify(message, turns)
    query, method, flags, errors = message, "unchanged", {}, {}
    if classification == "follow_up":
        settings = (await get_services()).settings
        model_name = resolve_model(
            runtime.context.rewrite_model or runtime.context.llm_model, settings
        )
        if model_name is None:
            query, method = rules_rewrite(message, history), "rules"
        else:
            prompt = prompts.REWRITE_PROMPT.format(
                history=prompts.format_history(history), question=message
            )
            model = chat_model(
                model_name,
                settings,
                temperature=runtime.context.rewrite_temperature,
                timeout=runtime.context.rewrite_timeout_s,
            )
            reason: str | None = None
            try:
                async with asyncio.timeout(runtime.context.rewrite_timeout_s):
                    reply = await model.ainvoke(
                        [HumanMessage(prompt)],
                        config={"tags": [TAG_NOSTREAM, "rewrite"]},
                    )
                text = clean_rewrite(reply.content if isinstance(reply.content, str) else "")
                if text:
                    query, method = text, "llm"
                else:
                    reason = "empty"
            except TimeoutError:
                reason = "timeout"
            except Exception as exc:  # any provider error: keep the original question
                reason = f"error: {type(exc).__name__}: {str(exc)[:200]}"
            if reason is not None:
                method, flags, errors = (
                    "fallback",
                    {"rewrite_fallback": reason},
                    {"rewrite": reason},
                )
    emit(runtime, "rewrite", classification=classification, query=query, method=method)
    return {
        "classification": classification,
        "rewritten_query": query,
        "rewrite_method": method,
        "flags": flags,
        "errors": errors,
        "timings": {"rewrite": ms_since(start)},
    }
