"""The graph's checkpointer: LangGraph's Postgres saver, which refuses a run on another
workspace's checkpoint thread before the run has written anything there.

A thread holds the checkpoints of a conversation: the one whose id the thread id is (or,
for a name such as ``"my-chat"``, whose UUID5 it is: :func:`~convrag.ids.conversation_uuid`),
and each one recorded as answered under it (``conversation_threads``). The first node's
``start_turn`` refuses another workspace's conversation too, but too late for the thread:
LangGraph has by then written the run's input checkpoint (``durability="async"``), or
will write it as the run ends on that error (``"exit"``). Either way workspace B's message
would sit in A's thread, where A's Studio shows it and a resume answers it as A's.

Every run loads its thread's latest checkpoint before it writes one, so
:class:`WorkspaceCheckpoints` checks there: the run's workspace is read from its
``Runtime`` context, which LangGraph hands the checkpointer in the run's config, and the
check is part of the load's own statement, so a turn costs no extra round trip. A call
made outside a run (``get_state``, Studio's thread views, pruning) names no workspace and
is not checked. A thread whose conversation does not exist yet passes (the run may create
it): should two workspaces start the first turn of one new id at the same moment, the one
``start_turn`` refuses has passed this check, and its checkpoint lands in the other's new
thread, under the newer ones that run writes.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph._internal._constants import CONFIG_KEY_RUNTIME
from langgraph.checkpoint.base import CheckpointTuple, get_checkpoint_id
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.runtime import Runtime

from convrag.ids import DEFAULT_WORKSPACE, conversation_uuid

_FOREIGN_CONVERSATION = """
    SELECT held.id::text AS foreign_conversation FROM (
        SELECT id, workspace_id FROM conversations WHERE id = %s
        UNION ALL
        SELECT c.id, c.workspace_id FROM conversation_threads t
        JOIN conversations c ON c.id = t.conversation_id WHERE t.thread_id = %s) held
    WHERE held.workspace_id <> %s
    LIMIT 1"""
"""A conversation of another workspace than the run's that the thread holds, if any."""


class ThreadOfAnotherWorkspace(PermissionError, ValueError):
    """A run named a checkpoint thread that holds another workspace's conversation.

    A ``ValueError`` too: langgraph-api tells an SDK or Studio client the message of only
    a few exception types (the others read "An internal error occurred"), and this one
    says what to fix. It names no other workspace."""

    def __init__(self, conversation_id: str, workspace_id: str, thread_id: str) -> None:
        where = "" if thread_id == conversation_id else f" (thread {thread_id!r} holds it)"
        super().__init__(
            f"conversation {conversation_id} is not in workspace {workspace_id}{where}"
        )
        self.conversation_id = conversation_id
        self.workspace_id = workspace_id
        self.thread_id = thread_id


def run_workspace(config: RunnableConfig) -> str | None:
    """The workspace of the run whose config this is, or None for a call outside a run.

    A run without a context runs in the default workspace, as its nodes do."""
    # LangGraph keeps the run's Runtime in its config (get_runtime() reads it there), and
    # the config it hands the checkpointer is the run's.
    runtime = config.get("configurable", {}).get(CONFIG_KEY_RUNTIME)
    if not isinstance(runtime, Runtime):
        return None
    workspace = getattr(runtime.context, "workspace_id", None)
    return workspace if isinstance(workspace, str) else DEFAULT_WORKSPACE


class WorkspaceCheckpoints(AsyncPostgresSaver):
    """LangGraph's Postgres saver whose load for a run refuses a thread that holds another
    workspace's conversation (:class:`ThreadOfAnotherWorkspace`), so the run stops before
    it writes a checkpoint or a pending write there (see the module docstring)."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        workspace = run_workspace(config)
        if workspace is None:
            return await super().aget_tuple(config)
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        args: list[Any] = [conversation_uuid(thread_id), thread_id, workspace]
        args += [thread_id, configurable.get("checkpoint_ns", "")]
        where = "WHERE thread_id = %s AND checkpoint_ns = %s"
        if checkpoint_id := get_checkpoint_id(config):
            where += " AND checkpoint_id = %s"
            args.append(checkpoint_id)
        query = f"""SELECT f.foreign_conversation, cp.* FROM (SELECT 1) AS one
            LEFT JOIN LATERAL ({_FOREIGN_CONVERSATION}) f ON TRUE
            LEFT JOIN LATERAL ({self.SELECT_SQL}{where}
                               ORDER BY checkpoint_id DESC LIMIT 1) cp
              ON f.foreign_conversation IS NULL"""
        async with self._cursor() as cur:
            await cur.execute(query, args, binary=True)
            value = await cur.fetchone()
        assert value is not None, "FROM (SELECT 1) gives the query its one row"
        if value["foreign_conversation"] is not None:
            raise ThreadOfAnotherWorkspace(value["foreign_conversation"], workspace, thread_id)
        if value["checkpoint"] is None:
            return None
        if value["checkpoint"]["v"] < 4 and value["parent_checkpoint_id"]:
            # An old checkpoint's pending sends need the library's migration.
            return await super().aget_tuple(config)
        return await self._load_checkpoint_tuple(value)
