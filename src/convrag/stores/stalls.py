"""A PostgreSQL server that stalls (stopped, frozen, its host hung) rather than dies: told
apart from a slow query, and every wait on it ended within about a second and a half.

A server that died closes its connections and refuses new ones, so every caller fails at
once. A stalled one does neither: a query sent to it waits forever (its
``statement_timeout`` is the server's own, and the server is not running), and so does a
new connection (up to ``connect_timeout``). Over a Unix socket no keepalive notices, and
over TCP only after ``tcp_user_timeout``.

:class:`StallWatch` watches every round trip of the pool's connections
(:class:`WatchedConnection`): one that has waited :attr:`StallWatch.SUSPECT_AFTER_S` makes
it probe the server on a connection of its own (connect, ``SELECT 1``), at most one probe
at a time. A server that answers the probe within :attr:`StallWatch.PROBE_S` is alive and
only slow: the round trip goes on waiting (the server's ``statement_timeout`` and
``lock_timeout`` bound it). One that does not is stalled: every round trip waiting on it
is ended at once (its socket shut down, so that it fails with :class:`DatabaseStalled`,
a ``psycopg.OperationalError``: a 503 or an ``error`` event), the pool lends no
connection until a probe is answered again (each new round trip fails at once), and the
watch probes again every :attr:`StallWatch.PROBE_EVERY_S` meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from typing import Any

import psycopg
from psycopg import AsyncConnection
from psycopg.rows import DictRow

log = logging.getLogger(__name__)


class DatabaseStalled(psycopg.OperationalError):
    """The database server stopped answering (see :class:`StallWatch`)."""


class StallWatch:
    """Tells a stalled server from a slow query for one connection pool; see the module
    docstring. ``conninfo`` and ``kwargs`` are the pool's, used by the probes."""

    SUSPECT_AFTER_S = 0.5
    """How long a round trip waits before the server is probed."""
    PROBE_S = 1.0
    """How long a probe (a new connection and ``SELECT 1``) may take on a live server."""
    PROBE_EVERY_S = 0.5
    """How often a stalled server is probed again."""
    TICK_S = 0.05
    """How often a probe looks at the clock, to tell a silent server from an event loop
    held by other work."""

    def __init__(self, conninfo: str, kwargs: dict[str, Any]) -> None:
        self._conninfo = conninfo
        self._kwargs = {k: v for k, v in kwargs.items() if k != "row_factory"}
        self.stalled = False
        """Whether the last probe went unanswered (and nothing was answered since)."""
        self._stalled_at = 0.0
        self._waiting: dict[WatchedConnection, float] = {}
        """The round trips under way: their connection, and when each began."""
        self._probing: asyncio.Task[None] | None = None
        self._answered_at = -1e9
        """When the last probe was answered (the loop's clock)."""
        self._closed = False

    def began(self, conn: WatchedConnection) -> asyncio.TimerHandle:
        """A round trip of ``conn`` begins: the server is probed if it lasts
        :attr:`SUSPECT_AFTER_S`. Cancel the handle returned when it ends (:meth:`ended`)."""
        loop = asyncio.get_running_loop()
        self._waiting[conn] = loop.time()
        return loop.call_later(self.SUSPECT_AFTER_S, self.suspect)

    def ended(self, conn: WatchedConnection, handle: asyncio.TimerHandle) -> None:
        handle.cancel()
        self._waiting.pop(conn, None)

    def answered(self) -> None:
        """A round trip was answered: the server runs."""
        if self.stalled:
            self.stalled = False
            log.warning(
                "the database answers again (it had stalled for %.1f s)",
                asyncio.get_running_loop().time() - self._stalled_at,
            )

    def suspect(self) -> None:
        """Something has waited :attr:`SUSPECT_AFTER_S` on the server (a round trip, or a
        caller for a connection while the pool connects), or a connection to it was lost
        or refused: probe it, unless a probe is under way or one was answered less than
        :attr:`SUSPECT_AFTER_S` ago. A server that refuses the probe (killed, stopped)
        counts as stalled too, until one is answered."""
        loop = asyncio.get_running_loop()
        if self._closed or (self._probing is not None and not self._probing.done()):
            return
        if loop.time() - self._answered_at < self.SUSPECT_AFTER_S:
            return
        self._probing = loop.create_task(self._probe_while_waiting())

    async def _probe_while_waiting(self) -> None:
        """Probe the server while a round trip has waited :attr:`SUSPECT_AFTER_S`; when a
        probe goes unanswered, end every round trip under way and probe again every
        :attr:`PROBE_EVERY_S` until one is answered."""
        loop = asyncio.get_running_loop()
        while True:
            if not await self._probe_once():
                break
            self._answered_at = loop.time()
            self.answered()
            long_ago = loop.time() - self.SUSPECT_AFTER_S
            if not any(began <= long_ago for began in self._waiting.values()):
                return
            await asyncio.sleep(self.SUSPECT_AFTER_S)
        if not self.stalled:
            self.stalled = True
            self._stalled_at = loop.time()
            log.warning(
                "the database does not answer within %.1f s: ending the %d round trips "
                "waiting on it",
                self.SUSPECT_AFTER_S + self.PROBE_S,
                len(self._waiting),
            )
        for conn in list(self._waiting):
            conn.abandon()
        while self.stalled:
            await asyncio.sleep(self.PROBE_EVERY_S)
            if await self._probe_once():
                self.answered()

    async def _probe_once(self) -> bool:
        """Connect and run ``SELECT 1`` within :attr:`PROBE_S` of this process's own
        time: while the event loop is held by other work (a batch of embeddings on a
        loaded machine), the reply cannot be read, so time the loop is late by is added
        to the wait (at most :attr:`PROBE_S` more). The attempt is abandoned, not
        cancelled, when it takes longer: cancelling a wait on a stalled server waits for
        the server to take the cancel request."""
        loop = asyncio.get_running_loop()
        attempt = loop.create_task(self._connect_and_select())
        deadline = loop.time() + self.PROBE_S
        latest = deadline + self.PROBE_S
        while not attempt.done() and (now := loop.time()) < deadline:
            step = min(self.TICK_S, deadline - now)
            await asyncio.wait({attempt}, timeout=step)
            late = loop.time() - now - step
            if late > self.TICK_S:
                deadline = min(deadline + late, latest)
        if not attempt.done():
            attempt.add_done_callback(_ignore_outcome)
            return False
        return attempt.exception() is None

    async def _connect_and_select(self) -> None:
        conn = await AsyncConnection.connect(self._conninfo, **self._kwargs)
        try:
            await conn.execute("SELECT 1")
        finally:
            with contextlib.suppress(Exception):
                await conn.close()

    async def close(self) -> None:
        """Stop probing (the pool is closing), for good."""
        self._closed = True
        if self._probing is not None and not self._probing.done():
            self._probing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probing


def _ignore_outcome(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


class WatchedConnection(AsyncConnection[DictRow]):
    """A pool's connection whose every round trip its pool's :class:`StallWatch` watches
    (:attr:`stall_watch`, set when the pool makes it; None: not watched)."""

    stall_watch: StallWatch | None = None
    _abandoned = False

    async def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        watch = self.stall_watch
        if watch is None:
            return await super().wait(gen, interval, timeout)
        if watch.stalled:
            self.abandon()  # fails at once instead of waiting on a stalled server
        handle = watch.began(self)
        try:
            result = await super().wait(gen, interval, timeout)
        except psycopg.OperationalError as exc:
            if self._abandoned:
                raise DatabaseStalled(
                    "the database server does not answer (stalled or unreachable)"
                ) from exc
            if self.broken:
                # The connection is lost (a server killed, or restarted): probe now, not
                # once another wait has lasted SUSPECT_AFTER_S, so that callers stop
                # waiting on a dead server within a refused probe's round trip.
                watch.suspect()
            raise
        finally:
            watch.ended(self, handle)
        watch.answered()
        return result

    def abandon(self) -> None:
        """End the round trip waiting on this connection now: shut its socket down, so
        that the wait reads the end of the stream and fails (the pool then discards the
        connection)."""
        self._abandoned = True
        with contextlib.suppress(OSError, psycopg.Error):
            fd = self.pgconn.socket
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)

    async def _try_cancel(self, *, timeout: float = 5.0) -> None:
        # A cancel request to a stalled server waits for it like any other request.
        watch = self.stall_watch
        if self._abandoned or (watch is not None and watch.stalled):
            return
        await super()._try_cancel(timeout=min(timeout, StallWatch.PROBE_S))
