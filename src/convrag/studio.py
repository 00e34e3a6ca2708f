"""The entry points ``langgraph.json`` names for ``langgraph dev`` and LangGraph Studio.

The dev server gives graph factories no process-wide place for dependencies, so:

- :func:`checkpointer` is entered once for the server's lifetime. It opens the services
  (which keeps the embedded PostgreSQL and Milvus Lite running) and yields a Postgres
  saver on their database.
- :func:`graph` is called per request. For an execution run it opens services for that
  run (the servers are already up, so this only connects) and compiles the graph with
  them; reads of the schema or of thread state get the same graph without services.
  A run that ends on an error or is cancelled (Studio's Cancel, the SDK's
  ``runs.cancel``) leaves its turn failed, as the Python API and the HTTP service do
  for their runs: the dev server runs the graph itself, and only this factory sees
  the whole run end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph_sdk.runtime import ServerRuntime

from convrag.assistant import STOPPED_TURN, failure_reason
from convrag.config import get_settings
from convrag.context import Context
from convrag.graph import compile_graph
from convrag.services import Services, install_sigterm_handler, open_services
from convrag.state import InputState, State

log = logging.getLogger(__name__)


@asynccontextmanager
async def checkpointer() -> AsyncIterator[AsyncPostgresSaver]:
    """The dev server's checkpointer, on the services kept open for its lifetime: the
    database's own, which refuses a run on another workspace's thread."""
    install_sigterm_handler()
    async with open_services(get_settings()) as services:
        yield services.db.checkpoints


@asynccontextmanager
async def graph(
    runtime: ServerRuntime[Any],
) -> AsyncIterator[CompiledStateGraph[State, Context, InputState, State]]:
    """The graph for one dev-server request; runs get their own services."""
    if runtime.execution_runtime is None:
        yield compile_graph()
        return
    async with open_services(get_settings()) as services:
        try:
            yield compile_graph(services=services)
        except BaseException as exc:
            await asyncio.shield(fail_unanswered_turns(services, exc))
            raise


async def fail_unanswered_turns(services: Services, exc: BaseException) -> None:
    """After a dev-server run that raised ``exc``: mark the turn it started and left
    unanswered ``failed``, with :data:`~convrag.assistant.STOPPED_TURN` when it was
    cancelled, else ``exc``'s :func:`~convrag.assistant.failure_reason`; left
    ``processing``, it would wait for restart recovery.

    The run's services are its own (see :func:`graph`), so the turns their database
    handle started and did not complete are exactly this run's (a refused run started
    none; an answered turn is ``done``). This is decided per run, not in a node: a node
    that LangGraph cancels because a sibling branch failed looks like one whose run was
    stopped. Best effort."""
    from langgraph_api.errors import UserInterrupt, UserRollback  # the dev server's own

    # langgraph-api ends a cancelled run by raising its reason in the run's task.
    stopped = isinstance(exc, (UserInterrupt, UserRollback))
    reason = STOPPED_TURN if stopped else failure_reason(exc)
    try:
        failed = await services.db.turns.fail_own_turns(reason)
    except Exception:
        log.warning(
            "marking the turn of a run that ended unanswered failed did not work", exc_info=True
        )
        return
    for turn_id in failed:
        log.info("turn %s ended unanswered: %s", turn_id, reason)
