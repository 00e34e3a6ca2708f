"""rewrite: classify the message and turn a follow-up into a standalone query.

With an LLM, the rewrite prompt at a low temperature and within the run's time limit; on
any failure (error, timeout, empty output) the original question is kept and the reason
recorded. Without an LLM, the deterministic contextualizer resolves pronouns and ellipsis
from the previous turns.
"""

from __future__ import annotations

from langchain_core.messages import HumanMessage
from langgraph.constants import TAG_NOSTREAM
from langgraph.runtime import Runtime

from convrag import prompts
from convrag.context import Context
from convrag.events import RewriteEvent, emit
from convrag.llm import attempt, chat_model, resolve_model
from convrag.records import HistoryTurn
from convrag.rewriting import Turn, classify, contextualize
from convrag.state import RewriteMethod, RewriteUpdate, State

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


async def llm_rewrite(
    message: str, history: list[HistoryTurn], model_name: str, ctx: Context
) -> tuple[str, None] | tuple[None, str]:
    """The LLM's standalone question, or ``(None, why it failed)``."""
    prompt = prompts.REWRITE_PROMPT.format(
        history=prompts.format_history(history), question=message
    )
    model = chat_model(
        model_name,
        ctx.deps.settings,
        temperature=ctx.rewrite_temperature,
        timeout=ctx.rewrite_timeout_s,
    )
    reply, failure = await attempt(
        model.ainvoke([HumanMessage(prompt)], config={"tags": [TAG_NOSTREAM, "rewrite"]}),
        ctx.rewrite_timeout_s,
    )
    if reply is None:
        return None, failure or "error"
    text = clean_rewrite(reply.content if isinstance(reply.content, str) else "")
    return (text, None) if text else (None, "empty")


async def rewrite(state: State, runtime: Runtime[Context]) -> RewriteUpdate:
    """Classify the message; rewrite a follow-up with the LLM, else with the rules."""
    ctx = runtime.context
    message = state["message"]
    history = state.get("history") or []
    classification = classify(message, [Turn(t["question"], t["answer"]) for t in history])
    query = message
    method: RewriteMethod = "unchanged"
    update = RewriteUpdate()
    if classification == "follow_up":
        model_name = resolve_model(ctx.rewrite_model or ctx.llm_model, ctx.deps.settings)
        if model_name is None:
            query, method = rules_rewrite(message, history), "rules"
        else:
            rewritten, failure = await llm_rewrite(message, history, model_name, ctx)
            if rewritten is not None:
                query, method = rewritten, "llm"
            else:
                method = "fallback"
                update["flags"] = {"rewrite_fallback": failure}
                update["errors"] = {"rewrite": failure or "error"}
    emit(
        runtime,
        RewriteEvent(event="rewrite", classification=classification, query=query, method=method),
    )
    update["classification"] = classification
    update["rewritten_query"] = query
    update["rewrite_method"] = method
    return update
