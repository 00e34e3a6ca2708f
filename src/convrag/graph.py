"""The conversational graph, wired in one place.

    load_history -> rewrite -+-> retrieve_documents -+-> synthesize <-> web_search
                             +-> retrieve_vectors ---+   ^
                             +------(no_retrieval)-------+
    synthesize -> check_repetition -> regenerate -> check_repetition ... -> persist -> END

``synthesize`` first merges the two retrieval lists into the turn's sources; web search
runs when that merge asks for it (requested, a freshness cue, low confidence) or when the
answering LLM calls the ``google_search`` tool, and ``synthesize`` then answers.

Routers return ``Literal`` node names. The regenerate loop is bounded by the
``regenerations`` counter in state, not by the recursion limit. Every node runs under its
:class:`~convrag.nodes.policy.NodePolicy` (timing, the run's time limit, degrading
instead of failing), listed in :data:`POLICIES`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.nodes.check_repetition import check_repetition
from convrag.nodes.load_history import load_history
from convrag.nodes.persist import persist
from convrag.nodes.policy import NodeFn, NodePolicy, apply_policy
from convrag.nodes.regenerate import regenerate
from convrag.nodes.retrieve_documents import retrieve_documents
from convrag.nodes.retrieve_vectors import retrieve_vectors
from convrag.nodes.rewrite import rewrite
from convrag.nodes.synthesize import retrieves, synthesize
from convrag.nodes.web_search import search_failed, web_search
from convrag.services import Services
from convrag.state import InputState, State

Retrieval = Literal["retrieve_documents", "retrieve_vectors"]


def route_after_rewrite(
    state: State, runtime: Runtime[Context]
) -> Sequence[Retrieval] | Literal["synthesize"]:
    """Both retrieval sources in one superstep, unless the message needs no retrieval."""
    if not retrieves(state, runtime.context):
        return "synthesize"
    return ["retrieve_documents", "retrieve_vectors"]


def route_after_synthesize(state: State) -> Literal["web_search", "check_repetition"]:
    """The merge or the answering LLM asked for a web search: run it, then answer."""
    return "web_search" if state.get("pending_web_query") else "check_repetition"


def route_after_check(state: State, runtime: Runtime[Context]) -> Literal["regenerate", "persist"]:
    """Regenerate a repetitive draft, up to ``max_regenerations`` times.

    An extractive draft is a pure function of the sources and the excluded entities:
    once a regenerated one repeats only entities already excluded, another would quote
    the same sentences, so the loop ends there (the verdict stays repetitive, and persist
    flags it unresolved).
    """
    repetition = state.get("repetition")
    regenerations = state.get("regenerations", 0)
    if (
        not (repetition and repetition["is_repetitive"])
        or regenerations >= runtime.context.max_regenerations
    ):
        return "persist"
    drafts = state.get("drafts") or []
    if regenerations and drafts and drafts[-1]["extractive"]:
        excluded = set(state.get("excluded_entities", []))
        if excluded.issuperset(repetition["repeated_entities"]):
            return "persist"
    return "regenerate"


def _retrieval_limit(ctx: Context) -> float:
    return ctx.retrieval_timeout_s


def _web_limit(ctx: Context) -> float:
    return ctx.web_timeout_s


NODES: dict[str, NodeFn] = {
    "load_history": load_history,
    "rewrite": rewrite,
    "retrieve_documents": retrieve_documents,
    "retrieve_vectors": retrieve_vectors,
    "web_search": web_search,
    "synthesize": synthesize,
    "check_repetition": check_repetition,
    "regenerate": regenerate,
    "persist": persist,
}
"""Every node, in the order a turn visits them."""

POLICIES: dict[str, NodePolicy] = {
    "load_history": NodePolicy(starts_turn=True),
    # A failed retrieval source or web search degrades to no results; the turn goes on.
    "retrieve_documents": NodePolicy(
        timeout=_retrieval_limit, fallback=lambda _: {"document_hits": []}
    ),
    "retrieve_vectors": NodePolicy(
        timeout=_retrieval_limit, fallback=lambda _: {"vector_hits": []}
    ),
    "web_search": NodePolicy(
        timeout=_web_limit, fallback=search_failed, flag="web_search_fallback"
    ),
}
"""Nodes whose policy is not the default (timed, errors fail the turn)."""


def build_graph(services: Services | None = None) -> StateGraph[State, Context, InputState, State]:
    """The uncompiled graph (compile it with a checkpointer).

    ``services`` serve runs whose context carries none (``langgraph dev``, whose runs get
    their context from the client).
    """
    g = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=State)
    for name, node in NODES.items():
        policy = POLICIES.get(name, NodePolicy())
        g.add_node(name, apply_policy(name, node, policy, services=services))

    g.add_edge(START, "load_history")
    g.add_edge("load_history", "rewrite")
    g.add_conditional_edges(
        "rewrite",
        route_after_rewrite,
        ["retrieve_documents", "retrieve_vectors", "synthesize"],
    )
    g.add_edge(["retrieve_documents", "retrieve_vectors"], "synthesize")
    g.add_edge("web_search", "synthesize")
    g.add_conditional_edges(
        "synthesize", route_after_synthesize, ["web_search", "check_repetition"]
    )
    g.add_conditional_edges("check_repetition", route_after_check, ["regenerate", "persist"])
    g.add_edge("regenerate", "check_repetition")
    g.add_edge("persist", END)
    return g


def compile_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None, *, services: Services | None = None
) -> CompiledStateGraph[State, Context, InputState, State]:
    """The graph, ready to run with ``checkpointer`` (and default ``services``).

    Every surface compiles the graph here (the Python API, the HTTP service,
    ``langgraph dev``). A run's input is checked by its first node: ``message`` is an
    ephemeral channel (:class:`~convrag.state.InputState`), so an SDK run without one fails
    in ``load_history`` before any turn is stored.
    """
    return build_graph(services).compile(checkpointer=checkpointer, name="convrag")
