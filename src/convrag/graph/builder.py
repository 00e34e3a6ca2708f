"""The conversational graph, wired in one place.

    load_history -> rewrite -+-> retrieve_documents -+-> merge_context -+-> web_search -+
                             +-> retrieve_vectors ---+                  |               |
                             +--------------(no_retrieval)------------- +-> synthesize <+
    synthesize -> (tool call) web_search -> synthesize
    synthesize -> check_repetition -> regenerate -> check_repetition ... -> persist -> END

Routers return ``Literal`` node names. The regenerate loop is bounded by the
``regenerations`` counter in state, not by the recursion limit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from convrag.graph.context import Context
from convrag.graph.state import InputState, State
from convrag.nodes import (
    check_repetition,
    load_history,
    merge_context,
    persist,
    regenerate,
    retrieve_documents,
    retrieve_vectors,
    rewrite,
    synthesize,
    web_search,
)

Retrieval = Literal["retrieve_documents", "retrieve_vectors"]


def route_after_rewrite(
    state: State, runtime: Runtime[Context]
) -> Sequence[Retrieval] | Literal["synthesize"]:
    """Both retrieval sources in one superstep, unless the message needs no retrieval."""
    if state.get("classification") == "no_retrieval" or not runtime.context.rag_enabled:
        return "synthesize"
    return ["retrieve_documents", "retrieve_vectors"]


def route_after_merge(state: State) -> Literal["web_search", "synthesize"]:
    return "web_search" if state.get("web_search_reason") else "synthesize"


def route_after_synthesize(state: State) -> Literal["web_search", "check_repetition"]:
    """The answering LLM called google_search: run it, then answer again."""
    return "web_search" if state.get("pending_web_query") else "check_repetition"


def route_after_check(state: State, runtime: Runtime[Context]) -> Literal["regenerate", "persist"]:
    repetition = state.get("repetition")
    if (
        repetition
        and repetition["is_repetitive"]
        and state.get("regenerations", 0) < runtime.context.max_regenerations
    ):
        return "regenerate"
    return "persist"


def build_graph() -> StateGraph[State, Context, InputState, State]:
    """The uncompiled graph (compile it with a checkpointer)."""
    g = StateGraph(State, context_schema=Context, input_schema=InputState, output_schema=State)
    g.add_node("load_history", load_history)
    g.add_node("rewrite", rewrite)
    g.add_node("retrieve_documents", retrieve_documents)
    g.add_node("retrieve_vectors", retrieve_vectors)
    g.add_node("merge_context", merge_context)
    g.add_node("web_search", web_search)
    g.add_node("synthesize", synthesize)
    g.add_node("check_repetition", check_repetition)
    g.add_node("regenerate", regenerate)
    g.add_node("persist", persist)

    g.add_edge(START, "load_history")
    g.add_edge("load_history", "rewrite")
    g.add_conditional_edges(
        "rewrite",
        route_after_rewrite,
        ["retrieve_documents", "retrieve_vectors", "synthesize"],
    )
    g.add_edge(["retrieve_documents", "retrieve_vectors"], "merge_context")
    g.add_conditional_edges("merge_context", route_after_merge, ["web_search", "synthesize"])
    g.add_edge("web_search", "synthesize")
    g.add_conditional_edges(
        "synthesize", route_after_synthesize, ["web_search", "check_repetition"]
    )
    g.add_conditional_edges("check_repetition", route_after_check, ["regenerate", "persist"])
    g.add_edge("regenerate", "check_repetition")
    g.add_edge("persist", END)
    return g


def compile_graph(
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> CompiledStateGraph[State, Context, InputState, State]:
    return build_graph().compile(checkpointer=checkpointer, name="convrag")


# ``langgraph dev`` loads this (see langgraph.json); the server injects its checkpointer.
graph = compile_graph()
