"""The part of the relational store that every other part builds on: the pool and this
process's liveness key (:class:`Shared`), the one way a store fetches rows
(:func:`fetch_one`, :func:`fetch_all` and the :class:`PooledStore` methods over them),
the workspace row, the processes' liveness locks and the rules built on them, and a
keyset position.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from psycopg import AsyncConnection
from psycopg.abc import Params, QueryNoTemplate
from psycopg.rows import DictRow
from psycopg_pool import AsyncConnectionPool

from convrag.ids import is_uuid

#: A keyset position in a list: the sort time and the id of the last row seen.
After = tuple[datetime, str]

#: The pool every store queries: autocommit connections that return dict rows.
Pool = AsyncConnectionPool[AsyncConnection[DictRow]]


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


# Two rules on the liveness locks that both conversations and turns obey: a turn may not
# start in a conversation being deleted, and a conversation may not be deleted while a
# turn of it is being answered. Here, below both stores, so that each reads the other's.

DELETE_MARK_S = 300
"""How long a conversation's delete mark keeps turns out, at most: a delete clears the
vectors and checkpoints in seconds, so a mark this old is one whose process failed to
clear it (and a mark whose process is gone stops counting at once)."""


def deleting(alias: str) -> str:
    """SQL true when the ``conversations`` row ``alias`` has a delete under way: marked
    less than :data:`DELETE_MARK_S` ago by a process that is still alive."""
    return (
        f"COALESCE({alias}.deleting_since > now() - interval '{DELETE_MARK_S} seconds'"
        f" AND {owner_alive(f'{alias}.deleting_owner')}, false)"
    )


#: A 'processing' turn younger than this keeps its conversation busy for other processes
#: (longer than any turn's time limits): the bound for a turn whose process recorded no
#: liveness lock; one whose lock is free stops blocking at once.
BUSY_FOR_S = 180

#: SQL true for a ``conversation_turns`` row that a live process is answering: what keeps
#: its conversation busy for a new message and out of reach of a delete.
ANSWERING_TURN = (
    f"status = 'processing' AND updated_at > now() - interval '{BUSY_FOR_S} seconds'"
    f" AND {owner_alive('owner')}"
)


async def fetch_one(
    conn: AsyncConnection[DictRow], query: QueryNoTemplate, params: Params | None = None
) -> DictRow | None:
    """The first row ``query`` returns on ``conn`` (a transaction's), or None."""
    return await (await conn.execute(query, params)).fetchone()


async def fetch_all(
    conn: AsyncConnection[DictRow], query: QueryNoTemplate, params: Params | None = None
) -> list[DictRow]:
    """Every row ``query`` returns on ``conn`` (a transaction's)."""
    return await (await conn.execute(query, params)).fetchall()


async def without_timeouts(conn: AsyncConnection[DictRow]) -> None:
    """Lift the session's ``statement_timeout`` and ``lock_timeout`` for the rest of the
    transaction on ``conn``: for the work that may rightly take longer than a request's
    queries (an ingest's writes, a workspace's chunks loaded whole, a reindex)."""
    await conn.execute(
        "SELECT set_config('statement_timeout', '0', true), set_config('lock_timeout', '0', true)"
    )


async def fetch_bool(conn: AsyncConnection[DictRow], query: str, *params: object) -> bool:
    """The boolean that a one-row, one-column ``query`` returns."""
    row = await fetch_one(conn, query, params)
    return row is not None and bool(next(iter(row.values())))


async def owns(
    conn: AsyncConnection[DictRow],
    table: Literal["conversations", "conversation_turns"],
    workspace_id: str,
    row_id: str,
) -> bool:
    """Whether ``row_id`` (a UUID) names a row of ``table`` in ``workspace_id``."""
    if not is_uuid(row_id):
        return False
    query = f"SELECT 1 FROM {table} WHERE workspace_id = %s AND id = %s"  # table: a Literal
    return await fetch_one(conn, query, (workspace_id, row_id)) is not None


@dataclass(slots=True)
class Shared:
    """What every store of one :class:`~convrag.stores.database.Database` shares: the
    connection pool, and this process's liveness key once the database holds its lock
    (None before), which the turns and the delete marks it writes record."""

    pool: Pool
    owner: int | None = None


class PooledStore:
    """What every part of the relational store is: a store over the shared connection
    pool (autocommit, dict rows) that knows this process's liveness key. Every query
    filters on the workspace, so one workspace never reads another's rows.

    A query that needs a connection of its own for one statement goes through
    :meth:`fetch_one`, :meth:`fetch_all` or :meth:`execute`; statements that must share a
    transaction take a connection and use the module's :func:`fetch_one` and
    :func:`fetch_all` on it.
    """

    def __init__(self, shared: Shared) -> None:
        self._shared = shared

    @property
    def pool(self) -> Pool:
        """The database's connection pool (see :attr:`Shared.pool`)."""
        return self._shared.pool

    @property
    def owner(self) -> int | None:
        """This process's liveness key (see :attr:`Shared.owner`)."""
        return self._shared.owner

    async def fetch_one(
        self, query: QueryNoTemplate, params: Params | None = None
    ) -> DictRow | None:
        """The first row of ``query`` on a connection of the pool's, or None."""
        async with self.pool.connection() as conn:
            return await fetch_one(conn, query, params)

    async def fetch_all(
        self, query: QueryNoTemplate, params: Params | None = None
    ) -> list[DictRow]:
        """Every row of ``query`` on a connection of the pool's."""
        async with self.pool.connection() as conn:
            return await fetch_all(conn, query, params)

    async def fetch_all_unhurried(
        self, query: QueryNoTemplate, params: Params | None = None
    ) -> list[DictRow]:
        """:meth:`fetch_all` for a query that may take long: without the session's
        time-outs (:func:`without_timeouts`)."""
        async with self.pool.connection() as conn, conn.transaction():
            await without_timeouts(conn)
            return await fetch_all(conn, query, params)

    async def execute(self, query: QueryNoTemplate, params: Params | None = None) -> int:
        """Run ``query`` on a connection of the pool's; how many rows it changed."""
        async with self.pool.connection() as conn:
            return (await conn.execute(query, params)).rowcount

    async def notify(self, channel: str, payload: str) -> None:
        """Send ``payload`` to every process listening on ``channel``
        (:class:`~convrag.stores.notices.Listener`), this one included."""
        await self.execute("SELECT pg_notify(%s, %s)", (channel, payload))

    async def ensure_workspace(self, workspace_id: str) -> None:
        """Create the workspace's row if it is new: documents, keys and conversations
        refer to it."""
        await self.execute(
            "INSERT INTO workspaces (id) VALUES (%s) ON CONFLICT DO NOTHING", (workspace_id,)
        )
