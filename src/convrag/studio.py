"""The entry points ``langgraph.json`` names for ``langgraph dev`` and LangGraph Studio.

The dev server gives graph factories no process-wide place for dependencies, so:

- :func:`checkpointer` is entered once for the server's lifetime. It opens the services
  (which keeps the embedded PostgreSQL and Milvus Lite running) and yields a Postgres
  saver on their database.
- :func:`graph` is called per request. For an execution run it opens services for that
  run (the servers are already up, so this only connects) and compiles the graph with
  them; reads of the schema or of thread state get the same graph without services.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph_sdk.runtime import ServerRuntime

from convrag.context import Context
from convrag.graph import compile_graph
from convrag.services import install_sigterm_handler, open_services
from convrag.state import InputState, State


@asynccontextmanager
async def checkpointer() -> AsyncIterator[AsyncPostgresSaver]:
    """The dev server's checkpointer, on the services kept open for its lifetime: the
    database's own, which refuses a run on another workspace's thread."""
    install_sigterm_handler()
    async with open_services() as services:
        yield services.db.checkpoints


@asynccontextmanager
async def graph(
    runtime: ServerRuntime[Any],
) -> AsyncIterator[CompiledStateGraph[State, Context, InputState, State]]:
    """The graph for one dev-server request; runs get their own services."""
    if runtime.execution_runtime is None:
        yield compile_graph()
        return
    async with open_services() as services:
        yield compile_graph(services=services)
