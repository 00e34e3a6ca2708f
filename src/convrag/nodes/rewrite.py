"""rewrite: classify the message and turn it into a standalone query for retrieval.

The work is a strategy's (:class:`~convrag.rewriting.rewriter.QueryRewriter`): with an LLM
configured, :class:`~convrag.rewriting.fallback.FallbackRewriter` (the LLM on every later
turn, in one JSON call, the rules when it fails and for chit-chat and first turns), else
:class:`~convrag.rewriting.rules.RulesRewriter` (the deterministic contextualizer and its
gate). The node reads the state, runs the strategy, starts embedding what the search will
look up, and writes the result: its flags say why the rules' rewrite was rejected
(``rewrite_rejected``) or why the LLM's was not used (``rewrite_fallback``).
"""

from __future__ import annotations

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.events import RewriteEvent, emit
from convrag.retrieval.planning import TurnQuery, plan_queries
from convrag.rewriting.fallback import FallbackRewriter
from convrag.rewriting.llm import LlmRewriter
from convrag.rewriting.rewriter import QueryRewriter, Rewrite
from convrag.rewriting.rules import RulesRewriter
from convrag.state import RewriteUpdate, State


async def rewrite(state: State, runtime: Runtime[Context]) -> RewriteUpdate:
    """Classify the message and make it standalone: by the LLM on every turn after the
    first when one is configured, else (or when that call fails) by the rules."""
    ctx = runtime.context
    message = state["question"]
    history = state.get("history") or []
    result = await _strategy(ctx).rewrite(message, history)
    if result.classification != "no_retrieval" and ctx.rag_enabled:
        _prefetch(
            TurnQuery(
                state["workspace_id"],
                message,
                result.query,
                result.classification,
                result.method,
                history,
            ),
            ctx,
        )
    emit(
        runtime,
        RewriteEvent(
            event="rewrite",
            classification=result.classification,
            query=result.query,
            method=result.method,
        ),
    )
    return _update(result)


def _strategy(ctx: Context) -> QueryRewriter:
    """The run's strategy: the LLM with the rules behind it when a rewrite model is
    configured, else the rules (with ``rewrite_rules_off`` switched off)."""
    rules = RulesRewriter(tuple(r.strip() for r in ctx.rewrite_rules_off.split(",") if r.strip()))
    model_name = ctx.rewrite_model_name()
    if model_name is None:
        return rules
    llm = LlmRewriter(model_name, ctx.deps.settings, ctx.rewrite_temperature, ctx.rewrite_timeout_s)
    return FallbackRewriter(llm, rules)


def _prefetch(turn: TurnQuery, ctx: Context) -> None:
    """Start embedding the texts the search will look up (the retrieval plan of this
    turn), while the graph moves on to the search."""
    ctx.deps.searcher.prefetch(*(q.text for q in plan_queries(turn, ctx.retrieval_policy)))


def _update(result: Rewrite) -> RewriteUpdate:
    """What the node writes: the result, the model's time and why a rewrite was not used."""
    update = RewriteUpdate()
    if result.llm_ms is not None:
        update["timings"] = {"rewrite_llm": result.llm_ms}
    flags: dict[str, str] = {}
    if result.rejected is not None:
        flags["rewrite_rejected"] = result.rejected
    if result.fallback is not None:
        flags["rewrite_fallback"] = result.fallback
        update["errors"] = {"rewrite": result.fallback}
    if flags:
        update["flags"] = flags
    update["classification"] = result.classification
    update["rewritten_query"] = result.query
    update["rewrite_method"] = result.method
    return update
