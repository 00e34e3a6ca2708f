"""The relational store: one PostgreSQL connection pool, the schema's migrations, and
the graph's checkpointer, composed of the stores that hold each concept's rows, each an
attribute of :class:`Database` over the one pool:

* :mod:`~convrag.stores.workspaces` (``workspaces``): a workspace's index state and its
  API keys;
* :mod:`~convrag.stores.documents` (``documents``): documents and their chunks;
* :mod:`~convrag.stores.originals` (``originals``): the uploaded files kept as their
  documents' originals;
* :mod:`~convrag.stores.conversations` (``conversations``): conversations, their delete
  marks and checkpoint threads;
* :mod:`~convrag.stores.turns` (``turns``): their turns, started, answered or failed;
* :mod:`~convrag.stores.feedback` (``feedback``): the ratings of answers;
* :mod:`~convrag.stores.transcripts` (``transcripts``): answers read back with their
  feedback and citations (:mod:`~convrag.stores.citations`), and whole conversations;
* :mod:`~convrag.stores.checkpoints` (``checkpoints``): the graph's checkpoints, each
  thread kept to the workspace of its conversation;
* :mod:`~convrag.stores.records`: the records of conversations and turns;
* :mod:`~convrag.stores.base`: what they share (the pool, the fetch helpers, the
  workspace row, liveness);
* :mod:`~convrag.stores.schema`: the append-only migrations :meth:`Database.setup` runs
  (the checkpoint-postgres pattern): never edit a migration that has shipped, append one.

Every row carries its ``workspace_id`` and every query filters on it, so one workspace can
never read another's rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import select
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any
from weakref import WeakKeyDictionary

import psycopg
from psycopg import AsyncConnection, errors
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout
from psycopg_pool.base import AttemptWithBackoff

from convrag.stores.base import (
    MIGRATIONS_LOCK,
    OWNER_LOCKS,
    Shared,
    fetch_bool,
    fetch_one,
    owner_alive,
)
from convrag.stores.checkpoints import WorkspaceCheckpoints
from convrag.stores.conversations import ConversationStore
from convrag.stores.documents import INTERRUPTED_DOCUMENT, ORPHANED_DOCUMENT, DocumentStore
from convrag.stores.feedback import FeedbackStore
from convrag.stores.originals import OriginalStore
from convrag.stores.schema import MIGRATIONS
from convrag.stores.stalls import StallWatch, WatchedConnection
from convrag.stores.transcripts import TranscriptStore
from convrag.stores.turns import INTERRUPTED_TURN, TurnStore
from convrag.stores.workspaces import WorkspaceStore


class DatabaseUnreachable(ValueError):
    """The database URL names no database this process can connect to."""


async def first_connection(url: str, *, timeout_s: int = 10) -> None:
    """Connect once, so that a wrong or unreachable URL fails at once with the reason (the
    pool would retry for 30 s, logging each attempt, and then name none)."""
    try:
        conn = await AsyncConnection.connect(url, autocommit=True, connect_timeout=timeout_s)
    except psycopg.Error as exc:
        # The parser's messages quote the whole URL, password included.
        why = " ".join(str(exc).replace(url, "<the URL>").split())[:300] or type(exc).__name__
        raise DatabaseUnreachable(
            f"cannot connect to the database (DATABASE_URL): {why}; check the URL, and that "
            "the server runs and the database exists"
        ) from exc
    await conn.close()


CONNECT_TIMEOUT_S = 5
"""How long the pool waits for a new connection to the server before it takes it for
unreachable (and callers stop waiting for connections, see :class:`_Pool`)."""

STATEMENT_TIMEOUT_S = 10.0
"""The server's ``statement_timeout`` for the pool's sessions unless the caller sets
another (``DATABASE_STATEMENT_TIMEOUT_S``): a query of a request or a turn takes
milliseconds; the long ones (migrations, an ingest's writes, loading a workspace's
chunks) lift it for their transaction (:func:`~convrag.stores.base.without_timeouts`)."""

LOCK_TIMEOUT_S = 3.0
"""The server's ``lock_timeout`` likewise (``DATABASE_LOCK_TIMEOUT_S``)."""

#: TCP settings of every connection to a server over the network (ignored on a Unix
#: socket): a peer that stops answering (a frozen host, a lost network) is noticed by
#: the kernel within seconds, not the system's default of minutes or hours. The
#: :class:`~convrag.stores.stalls.StallWatch` ends the waits on it sooner still.
TCP_SETTINGS: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 5,
    "keepalives_interval": 2,
    "keepalives_count": 3,
    "tcp_user_timeout": 10_000,  # ms: unacknowledged data for this long breaks the connection
}


def session_settings(url: str, statement_timeout_s: float, lock_timeout_s: float) -> dict[str, Any]:
    """The connection parameters every session of the pool gets: the server-side time-outs
    (``0`` for none) added to the URL's own ``options``, the connect time-out and
    :data:`TCP_SETTINGS` (the URL's own values win)."""
    given = psycopg.conninfo.conninfo_to_dict(url)
    options = " ".join(
        part
        for part in (
            str(given.get("options") or ""),
            f"-c statement_timeout={round(statement_timeout_s * 1000)}",
            f"-c lock_timeout={round(lock_timeout_s * 1000)}",
        )
        if part
    )
    settings = {k: v for k, v in TCP_SETTINGS.items() if k not in given}
    # A server that does not answer (a lost network) counts as unreachable after
    # this, rather than after the operating system's own time-out.
    settings["connect_timeout"] = given.get("connect_timeout") or CONNECT_TIMEOUT_S
    return {**settings, "options": options}


class _CappedBackoff(AttemptWithBackoff):
    """psycopg_pool's reconnect back-off, capped: its doubling delay reaches 30 s and
    more during a long outage, which kept requests failing that long after the server
    was back; capped at 2 s, the pool is whole again within about 2 s."""

    MAX_DELAY = 2.0

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, self.MAX_DELAY)


def _has_news(conn: AsyncConnection[DictRow]) -> bool:
    """Whether an idle connection's socket has something to read, without waiting: a
    pooled connection asked nothing, so that is the server's goodbye (its backend
    terminated, the server shut down or killed) or a closed socket."""
    try:
        ready, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(ready)


class _Pool(AsyncConnectionPool[AsyncConnection[DictRow]]):
    """The connection pool, reconnecting with :class:`_CappedBackoff`.

    A connection is checked (one empty query) before it is lent only when it has sat
    idle for :attr:`CHECK_IDLE_S`, or when the server has written to it since its return
    (:func:`_has_news`: a terminated backend's goodbye, a closed socket): one that
    served a request a moment ago is almost certainly alive, and checking every loan
    doubled the round trips of a turn.

    While the server is unreachable (the pool's last attempt to connect failed), a
    caller waits at most :attr:`OUTAGE_WAIT_S` for a connection, not the pool's whole
    ``timeout``: each of a turn's database calls had waited 10 s during an outage, which
    held an in-flight turn 30 s and more before its ``error`` event, and every request
    10 s before its 503. A pool that is only busy keeps its callers waiting up to
    ``timeout``.

    A server that stalls (stopped, not dead) is told apart by :attr:`stall_watch`:
    while it stalls, the pool lends no connection (:class:`PoolTimeout` at once). A
    connection lost or refused (a server killed) has the watch probe at once; a refused
    probe counts as a stall, so callers stop waiting on a dead server within a probe's
    round trip.
    """

    CHECK_IDLE_S = 1.0
    OUTAGE_WAIT_S = 1.0
    STALL_CHECK_S = 0.25

    def __init__(self, conninfo: str, **kwargs: Any) -> None:
        self._returned_at: WeakKeyDictionary[AsyncConnection[DictRow], float] = WeakKeyDictionary()
        self.unreachable = False
        """Whether the last attempt to connect failed (and none has succeeded since)."""
        self.stall_watch = StallWatch(conninfo, kwargs.get("kwargs") or {})
        super().__init__(
            conninfo,
            check=self._check_if_idle,
            reset=self._note_return,
            configure=self._watch,
            connection_class=WatchedConnection,
            **kwargs,
        )

    async def _watch(self, conn: AsyncConnection[DictRow]) -> None:
        if isinstance(conn, WatchedConnection):
            conn.stall_watch = self.stall_watch

    async def getconn(self, timeout: float | None = None) -> AsyncConnection[DictRow]:
        """A connection within ``timeout`` (the pool's by default), waited for in slices
        of :attr:`STALL_CHECK_S`: a caller stops waiting once the server is found stalled,
        or unreachable for :attr:`OUTAGE_WAIT_S`."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        deadline = began + (self.timeout if timeout is None else timeout)
        while True:
            if self.stall_watch.stalled:
                raise PoolTimeout("the database server does not answer (stalled)")
            try:
                return await super().getconn(min(deadline - loop.time(), self.STALL_CHECK_S))
            except PoolTimeout:
                now = loop.time()
                if now - began >= StallWatch.SUSPECT_AFTER_S:
                    # A connection the pool is making may wait on a stalled server.
                    self.stall_watch.suspect()
                if now >= deadline or (self.unreachable and now - began >= self.OUTAGE_WAIT_S):
                    raise

    async def _connect(self, timeout: float | None = None) -> AsyncConnection[DictRow]:
        try:
            conn = await super()._connect(timeout)
        except Exception:
            self.unreachable = True
            # Refused (a server killed or stopped) or timed out: have the watch probe
            # now, so that callers waiting for a connection stop within a probe's round
            # trip rather than after SUSPECT_AFTER_S or OUTAGE_WAIT_S.
            self.stall_watch.suspect()
            raise
        self.unreachable = False
        return conn

    async def _note_return(self, conn: AsyncConnection[DictRow]) -> None:
        self._returned_at[conn] = time.monotonic()

    async def _check_if_idle(self, conn: AsyncConnection[DictRow]) -> None:
        recent = time.monotonic() - self._returned_at.get(conn, 0.0) < self.CHECK_IDLE_S
        if not recent or _has_news(conn):
            await AsyncConnectionPool.check_connection(conn)

    async def _add_connection(
        self, attempt: AttemptWithBackoff | None, growing: bool = False
    ) -> None:
        await super()._add_connection(
            attempt or _CappedBackoff(timeout=self.reconnect_timeout), growing
        )

    async def close(self, timeout: float = 5.0) -> None:
        await self.stall_watch.close()
        await super().close(timeout)


class Database:
    """Async access to the convrag schema through one psycopg connection pool.

    Construct with :meth:`from_url` (an async context manager). The pool's connections use
    autocommit and dict rows, which is also what ``AsyncPostgresSaver`` needs, so the
    checkpointer shares this pool.

    It is composed of one store per concept (``db.turns``, ``db.conversations``, ...; see
    the module docstring), which share the pool and :attr:`owner`. A store's methods are
    called on the store (``db.turns.start_turn``); the database's own are the pool's, the
    migrations', the checkpoints' and the liveness lock's.
    """

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection[DictRow]]) -> None:
        self.pool = pool
        self._shared = Shared(pool)
        self.checkpoints = WorkspaceCheckpoints(pool)
        """The graph's checkpointer: LangGraph's Postgres saver, on this pool, refusing a
        run on another workspace's thread before it writes there."""
        self.workspaces = WorkspaceStore(self._shared)
        self.documents = DocumentStore(self._shared)
        self.originals = OriginalStore(self._shared)
        self.conversations = ConversationStore(self._shared)
        self.turns = TurnStore(self._shared)
        self.feedback = FeedbackStore(self._shared)
        self.transcripts = TranscriptStore(self._shared, self.conversations)

    LIVENESS_CHECK_S = 5.0
    """How often the liveness lock's connection is checked when it sends nothing (a
    loss that closes it is seen at once)."""

    @property
    def owner(self) -> int | None:
        """This process's liveness key, recorded on the turns it starts: while it holds
        the advisory lock (:data:`OWNER_LOCKS`, ``owner``), its ``processing`` turns are
        being answered; once it is gone (killed, crashed), they are orphans that another
        message may take over at once instead of after
        :data:`~convrag.stores.base.BUSY_FOR_S`. None until :meth:`from_url` holds the
        lock. Every store reads it from :class:`~convrag.stores.base.Shared`."""
        return self._shared.owner

    @owner.setter
    def owner(self, owner: int | None) -> None:
        self._shared.owner = owner

    @asynccontextmanager
    async def _liveness_lock(self, url: str) -> AsyncIterator[None]:
        """Hold this process's liveness lock on a connection of its own while the block
        runs, taking it again as soon as the database accepts a connection should that
        one be lost (a database restart, its backend terminated): the keeper waits on the
        connection itself, so a loss is seen at once, and checks it every
        :attr:`LIVENESS_CHECK_S` for a loss that sends nothing."""
        owner = secrets.randbelow(2**31 - 2) + 1

        async def lock() -> AsyncConnection[Any]:
            conn = await AsyncConnection.connect(
                url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S
            )
            await conn.execute("SELECT pg_advisory_lock(%s, %s)", (OWNER_LOCKS, owner))
            return conn

        async def relock() -> AsyncConnection[Any]:
            delay = 0.05
            while True:
                try:
                    return await lock()
                except Exception:
                    await asyncio.sleep(delay)  # the server is not back yet
                    delay = min(2 * delay, self.LIVENESS_CHECK_S)

        conn = await lock()
        self.owner = owner

        async def keep() -> None:
            nonlocal conn
            while True:
                try:
                    # Returns after the check interval; raises when the connection fails.
                    async for _ in conn.notifies(timeout=self.LIVENESS_CHECK_S):
                        pass
                    await conn.execute("SELECT 1")
                except Exception:
                    with contextlib.suppress(Exception):
                        await conn.close()
                    conn = await relock()

        keeper = asyncio.get_running_loop().create_task(keep())
        try:
            yield
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
            self.owner = None
            await conn.close()

    @classmethod
    @asynccontextmanager
    async def from_url(
        cls,
        url: str,
        *,
        max_size: int = 10,
        statement_timeout_s: float = STATEMENT_TIMEOUT_S,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
    ) -> AsyncIterator[Database]:
        """The database at ``url``; its sessions run with the server-side time-outs given
        (0: none)."""
        await first_connection(url)
        pool: AsyncConnectionPool[AsyncConnection[DictRow]] = _Pool(
            url,
            min_size=1,
            max_size=max_size,
            open=False,
            kwargs={
                "autocommit": True,
                "prepare_threshold": 0,
                "row_factory": dict_row,
                **session_settings(url, statement_timeout_s, lock_timeout_s),
            },
            # An idle connection is checked before it is lent, so one broken by a restart
            # is replaced instead of failing a request; waiting for one is bounded, and a
            # lost server is retried every few seconds, not with a long back-off.
            timeout=10.0,
            reconnect_timeout=3600.0,
        )
        await pool.open(wait=True)
        try:
            db = cls(pool)
            async with db._liveness_lock(url):
                yield db
        finally:
            await pool.close()

    async def setup(self) -> int:
        """Apply the migrations not yet applied, and the checkpointer's own; returns how
        many of ours ran. Safe to call often.

        They run without the sessions' time-outs: a migration may rewrite a large table,
        and waits for other starting processes' migrations (their advisory lock)."""
        async with self.pool.connection() as conn:
            await conn.execute("SET statement_timeout = 0")
            await conn.execute("SET lock_timeout = 0")
            try:
                ran = await self._migrate(conn)
                await WorkspaceCheckpoints(conn).setup()
            finally:
                # Back to the session's own values (its connection's options).
                await conn.execute("RESET statement_timeout")
                await conn.execute("RESET lock_timeout")
        return ran

    async def delete_checkpoints(self, conversation_id: str) -> None:
        """Delete a conversation's checkpoints: those of its own thread id and of every
        other thread id it was answered under
        (:meth:`~convrag.stores.conversations.ConversationStore.checkpoint_threads`)."""
        for thread_id in await self.conversations.checkpoint_threads(conversation_id):
            await self.checkpoints.adelete_thread(thread_id)

    async def prune_checkpoints(self, thread_id: str) -> bool:
        """Keep only a conversation's latest checkpoint (its history lives in the turns
        table; the latest checkpoint is all a resumed run needs). False when another
        prune of the thread ran at the same time: the next turn prunes again."""
        try:
            await self.checkpoints.aprune([thread_id], strategy="keep_latest")
        except (errors.SerializationFailure, errors.DeadlockDetected):
            return False
        return True

    @asynccontextmanager
    async def exclusive(self, lock_id: int) -> AsyncIterator[None]:
        """Hold PostgreSQL advisory lock ``lock_id`` for the block: one process at a time
        of all those sharing this database runs it (say, creating a shared collection).

        It polls instead of waiting in ``pg_advisory_lock``: a waiting statement is an open
        transaction, and the holder's ``CREATE INDEX CONCURRENTLY`` (the checkpointer's
        setup) waits for every open transaction, which would deadlock the two unseen.
        """
        async with self.pool.connection() as conn:
            while not await fetch_bool(conn, "SELECT pg_try_advisory_lock(%s)", lock_id):
                await asyncio.sleep(0.1)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (lock_id,))

    @staticmethod
    async def _migrate(conn: AsyncConnection[DictRow]) -> int:
        async with conn.transaction():
            # Several processes may start at once: serialise them.
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATIONS_LOCK,))
            await conn.execute(MIGRATIONS[0])
            row = await fetch_one(conn, "SELECT max(v) AS v FROM convrag_migrations")
            done = -1 if row is None or row["v"] is None else int(row["v"])
            ran = 0
            for version in range(done + 1, len(MIGRATIONS)):
                await conn.execute(MIGRATIONS[version])
                await conn.execute("INSERT INTO convrag_migrations (v) VALUES (%s)", (version,))
                ran += 1
            return ran

    async def recover_interrupted(self, older_than: timedelta) -> tuple[int, int]:
        """Mark turns and documents left ``processing`` for longer than ``older_than``
        (by ``updated_at``, on the database's clock) as ``failed``, with
        :data:`INTERRUPTED_TURN` / :data:`INTERRUPTED_DOCUMENT`; returns how many of each.

        Run at service start. Several workers share the database, so a row another live
        worker is working on must not be touched: only rows older than the age rule are,
        and the age must be longer than any live turn or ingest runs (a turn is bounded
        by the LLM's timeouts; an ingest updates its row only when it ends). A turn
        whose process is known to be gone (its liveness lock is free) is failed at once,
        whatever its age.
        """
        async with self.pool.connection() as conn, conn.transaction():
            turns = await conn.execute(
                f"""UPDATE conversation_turns SET status = 'failed', error = %s,
                          updated_at = now()
                   WHERE status = 'processing'
                     AND (updated_at < now() - %s OR NOT {owner_alive("owner")})""",
                (INTERRUPTED_TURN, older_than),
            )
            # An upload whose process is gone is stopped, not failed: the start that
            # follows resumes it from its saved file (:meth:`DocumentStore.stopped_uploads`).
            await conn.execute(
                f"""UPDATE documents SET interrupted = true, error = %s, updated_at = now()
                   WHERE status = 'processing' AND NOT interrupted AND owner IS NOT NULL
                     AND upload_path IS NOT NULL AND NOT {owner_alive("owner")}""",
                (ORPHANED_DOCUMENT,),
            )
            docs = await conn.execute(
                """UPDATE documents SET status = 'failed', error = %s, updated_at = now()
                   WHERE status = 'processing' AND NOT interrupted
                     AND updated_at < now() - %s""",
                (INTERRUPTED_DOCUMENT, older_than),
            )
            return turns.rowcount, docs.rowcount

    async def ping(self, *, timeout: float = 2.0) -> bool:
        """Whether Postgres answers a query within ``timeout`` s, the wait for a connection
        included. Returns by then whatever the server does: a query still waiting is left
        to end on its own (cancelling a wait on a stalled server waits for the server)."""
        attempt = asyncio.get_running_loop().create_task(self._select_one(timeout))
        done, _ = await asyncio.wait({attempt}, timeout=timeout)
        if not done:
            attempt.add_done_callback(lambda t: t.cancelled() or t.exception())
            return False
        return not attempt.cancelled() and attempt.exception() is None

    async def _select_one(self, timeout: float) -> None:
        async with self.pool.connection(timeout=timeout) as conn:
            await conn.execute("SELECT 1")
