"""Requests between the processes that share the database: PostgreSQL ``LISTEN`` and
``NOTIFY``.

With ``convrag serve --workers N`` (or several servers on one database), a request may
reach a process other than the one doing the work it is about: a stop of an answer
that another worker is writing. The process that got the request sends a notification
(:meth:`~convrag.stores.base.PooledStore.notify`); every process listens on the channel
on one connection of its own (:class:`Listener`) and acts when the work is its own.
A notification is not stored: one sent while a listener's connection is lost is missed,
so the sender waits for the work's effect in the database, not for a reply, and asks
again while it waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import psycopg
from psycopg import AsyncConnection, sql

log = logging.getLogger(__name__)


class Listener:
    """One connection of this process listening on ``channel``: each notification's
    payload is handed to ``handler``, on the event loop (it must not block; an error it
    raises is logged). The connection is checked every :attr:`CHECK_S` seconds without a
    notification, and opened again when it is lost (a database restart).

    Open with :meth:`open` (an async context manager); it listens once the block starts.
    """

    CHECK_S = 5.0
    """How long the connection may be silent before it is checked."""

    RETRY_S = 1.0
    """How long to wait between attempts to open a lost connection again."""

    def __init__(self, url: str, channel: str, handler: Callable[[str], None]) -> None:
        self.url = url
        self.channel = channel
        self.handler = handler

    @classmethod
    @asynccontextmanager
    async def open(
        cls, url: str, channel: str, handler: Callable[[str], None]
    ) -> AsyncIterator[Listener]:
        """A listener on ``channel`` of the database at ``url`` for the block's lifetime."""
        listener = cls(url, channel, handler)
        conn = await listener._connect()
        task = asyncio.get_running_loop().create_task(listener._listen(conn))
        try:
            yield listener
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _connect(self) -> AsyncConnection[Any]:
        conn = await AsyncConnection.connect(self.url, autocommit=True)
        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
        return conn

    async def _listen(self, conn: AsyncConnection[Any]) -> None:
        try:
            while True:
                try:
                    async for notice in conn.notifies(timeout=self.CHECK_S):
                        self._deliver(notice.payload)
                    await conn.execute("SELECT 1")
                except psycopg.Error as exc:
                    log.warning(
                        "listening on %s: the connection was lost (%s); opening it again",
                        self.channel,
                        type(exc).__name__,
                    )
                    with contextlib.suppress(Exception):
                        await conn.close()
                    conn = await self._reconnect()
        finally:
            with contextlib.suppress(Exception):
                await conn.close()

    async def _reconnect(self) -> AsyncConnection[Any]:
        while True:
            try:
                return await self._connect()
            except psycopg.Error:
                await asyncio.sleep(self.RETRY_S)

    def _deliver(self, payload: str) -> None:
        try:
            self.handler(payload)
        except Exception:
            log.warning("handling a notification on %s failed", self.channel, exc_info=True)
