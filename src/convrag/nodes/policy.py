"""One home for node policy: services, timing, per-run timeouts, degraded results.

LangGraph's own node options do not fit convrag's needs: its ``timeout`` is fixed when the
graph is compiled, while convrag's time limits are knobs of each run's
:class:`~convrag.context.Context`; and an ``error_handler`` is an extra node, which
would add a superstep to every failing branch. So the graph wraps every node once, here:

- the run gets its services: the context's own, else the ones the graph was compiled with
  (``langgraph dev`` builds the graph per run with the services it opened);
- each node's wall time lands in ``timings``;
- a node with a ``timeout`` runs under the run's limit;
- a node with a ``fallback`` degrades instead of failing the turn: the error goes to
  ``errors[node]`` (and to the node's ``flag``, if it has one, which clients see), the
  server log gets one warning line, and the fallback's update is written instead, except
  for a workspace
  embedded with another model (:class:`~convrag.embeddings.EmbeddingMismatch`), which
  no fallback can answer for: "not found" would blame the documents;
- the node that starts a turn has its update passed through
  :func:`~convrag.state.start_turn`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.embeddings import EmbeddingMismatch
from convrag.failures import failure_detail, failure_text
from convrag.services import Services
from convrag.state import State, start_turn

log = logging.getLogger(__name__)

NodeFn = Callable[[State, Runtime[Context]], Awaitable[Mapping[str, Any]]]
"""A node as written: state and runtime in, a typed partial update out."""


class GraphNode(Protocol):
    """A node as the graph runs it (LangGraph passes ``runtime`` by keyword)."""

    def __call__(self, state: State, *, runtime: Runtime[Context]) -> Awaitable[dict[str, Any]]: ...


@dataclass(frozen=True)
class NodePolicy:
    """How the graph runs one node."""

    timeout: Callable[[Context], float] | None = None
    """The run's time limit for the node, read from its context."""
    fallback: Callable[[State], Mapping[str, Any]] | None = None
    """The update written when the node fails or times out; ``None`` fails the turn."""
    flag: str | None = None
    """The turn flag that records why the fallback was written (``web_search_fallback``)."""
    starts_turn: bool = False
    """The node's update resets every per-turn field first."""


def ms_since(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)


def with_services(runtime: Runtime[Context], services: Services | None) -> Runtime[Context]:
    """The runtime whose context carries services: its own, else ``services``."""
    context = runtime.context if runtime.context is not None else Context()
    if context.services is None and services is not None:
        context = replace(context, services=services)
    return runtime if context is runtime.context else runtime.override(context=context)


def apply_policy(
    name: str, node: NodeFn, policy: NodePolicy, *, services: Services | None = None
) -> GraphNode:
    """``node`` as the graph runs it under ``policy`` (see the module docstring)."""

    async def run(state: State, *, runtime: Runtime[Context]) -> dict[str, Any]:
        runtime = with_services(runtime, services)
        start = time.perf_counter()
        errors: dict[str, str] = {}
        try:
            if policy.timeout is None:
                update = await node(state, runtime)
            else:
                async with asyncio.timeout(policy.timeout(runtime.context)):
                    update = await node(state, runtime)
        except Exception as exc:
            if policy.fallback is None or isinstance(exc, EmbeddingMismatch):
                raise
            log.warning("%s failed, falling back: %s", name, failure_detail(exc))
            update, errors = policy.fallback(state), {name: failure_text(exc)}
        out = dict(update)
        if errors:
            out["errors"] = {**out.get("errors", {}), **errors}
            if policy.flag is not None:
                out["flags"] = {**out.get("flags", {}), policy.flag: errors[name]}
        out["timings"] = {**out.get("timings", {}), name: ms_since(start)}
        return start_turn(out) if policy.starts_turn else out

    run.__name__ = name
    run.__qualname__ = name
    run.__doc__ = node.__doc__
    return run
