"""The part of the relational store that every other part builds on: the pool, the
workspace row, the processes' liveness locks, and a keyset position.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from psycopg import AsyncConnection
from psycopg.rows import DictRow
from psycopg_pool import AsyncConnectionPool

#: A keyset position in a list: the sort time and the id of the last row seen.
After = tuple[datetime, str]


INTERRUPTED_AFTER = timedelta(minutes=10)
"""How long a row may stay ``processing`` before it is taken for interrupted (its process
died): restart recovery and a retried idempotency key use this age. It is longer than any
live turn takes (the LLM's timeouts bound it) and than an upload's ingest, so no live
worker's row is touched."""


# The project's PostgreSQL advisory locks, in one place so that no two share a key.

MIGRATIONS_LOCK = 7214001
"""Held (for its transaction) by the process applying the migrations: one at a time."""

SETUP_LOCK = 7214002
"""Held by the process setting up the stores (the checkpointer's tables, the shared
collection): processes sharing a database start one at a time."""

OWNER_LOCKS = 7214003
"""The advisory-lock class of the processes' liveness locks: a process holds
``pg_advisory_lock(OWNER_LOCKS, owner)`` on a connection of its own while it lives, and
PostgreSQL drops the lock when that connection dies with the process."""

RESUME_LOCK = 7214004
"""Held by the process taking up the uploads a shutdown stopped, at its start: each is
taken up by one of the processes starting together."""


def owner_alive(column: str) -> str:
    """SQL true when the process that ``column`` names still holds its liveness lock (or
    is unknown: a turn from before owners were recorded)."""
    return (
        f"({column} IS NULL OR EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory'"
        f" AND l.classid = {OWNER_LOCKS} AND l.objid = {column}::oid AND l.objsubid = 2"
        " AND l.granted))"
    )


async def fetch_bool(conn: AsyncConnection[DictRow], query: str, *params: object) -> bool:
    """The boolean that a one-row, one-column ``query`` returns."""
    row = await (await conn.execute(query, params)).fetchone()
    return row is not None and bool(next(iter(row.values())))


class PooledStore:
    """What every part of the relational store shares: the connection pool (autocommit,
    dict rows) and this process's liveness key. Every query filters on the workspace, so
    one workspace never reads another's rows."""

    pool: AsyncConnectionPool[AsyncConnection[DictRow]]
    owner: int | None

    async def notify(self, channel: str, payload: str) -> None:
        """Send ``payload`` to every process listening on ``channel``
        (:class:`~convrag.stores.notices.Listener`), this one included."""
        async with self.pool.connection() as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    async def ensure_workspace(self, workspace_id: str) -> None:
        """Create the workspace's row if it is new: documents, keys and conversations
        refer to it."""
        async with self.pool.connection() as conn:
            await conn.execute(
                "INSERT INTO workspaces (id) VALUES (%s) ON CONFLICT DO NOTHING", (workspace_id,)
            )
