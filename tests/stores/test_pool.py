"""The connection pool: idle connections are checked before a loan, busy ones are not; a
caller waits a moment for a connection while the server is down, a busy pool's the
pool's whole wait; a frozen server ends every wait on it within seconds, a slow query
on a live one runs to its end."""

from __future__ import annotations

import asyncio
import select
import time
from collections.abc import Iterator

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from convrag.stores.database import Database
from convrag.stores.embedded import EmbeddedPostgres
from convrag.stores.stalls import DatabaseStalled, StallWatch
from convrag.testing.faults import PostgresFreeze
from tests.serving import scratch_dir


@pytest.fixture
def postgres() -> Iterator[tuple[EmbeddedPostgres, str]]:
    with scratch_dir("pool") as path:
        pg = EmbeddedPostgres(path)
        try:
            yield pg, pg.start()
        finally:
            pg.stop()


async def _select_one(db: Database) -> int:
    async with db.pool.connection() as conn:
        row = await (await conn.execute("SELECT 1 AS one")).fetchone()
    assert row is not None
    return int(row["one"])


async def test_a_connection_broken_by_a_postgres_restart_is_replaced_before_a_loan(
    postgres: tuple[EmbeddedPostgres, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pg, url = postgres
    async with Database.from_url(url, max_size=1) as db:
        assert await _select_one(db) == 1
        pg.stop()
        pg.start()
        # As after a pause: the pooled connection has been idle long enough to be checked.
        monkeypatch.setattr(db.pool, "CHECK_IDLE_S", 0.0)
        assert await _select_one(db) == 1


async def test_a_connection_returned_a_moment_ago_is_lent_without_a_check(
    postgres: tuple[EmbeddedPostgres, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url = postgres
    checks: list[object] = []
    original = AsyncConnectionPool.check_connection

    async def counted(conn: object) -> None:
        checks.append(conn)
        await original(conn)  # type: ignore[arg-type]

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted))
    async with Database.from_url(url, max_size=1) as db:
        monkeypatch.setattr(db.pool, "CHECK_IDLE_S", 3600.0)
        await _select_one(db)
        await _select_one(db)
        await _select_one(db)
    assert len(checks) <= 1  # at most the first loan of a never-returned connection


async def test_a_connection_returned_a_moment_ago_is_replaced_when_its_backend_was_terminated(
    postgres: tuple[EmbeddedPostgres, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's goodbye waits on the idle connection's socket: seen without a round
    trip, so the loan right after it gets a live connection, not a failed query."""
    _, url = postgres
    async with Database.from_url(url, max_size=1) as db:
        monkeypatch.setattr(db.pool, "CHECK_IDLE_S", 3600.0)
        async with db.pool.connection() as conn:
            pid = conn.info.backend_pid
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as killer:
            await killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        for _ in range(100):  # until the goodbye has reached the socket
            if select.select([conn.fileno()], [], [], 0)[0]:
                break
            await asyncio.sleep(0.01)
        assert await _select_one(db) == 1


#: A hang detector, not a timing: the pool's own wait below is 60 s, and a caller while
#: the server is down must be answered long before.
HANG_S = 30.0


async def test_while_postgres_is_down_a_caller_is_refused_at_once_not_after_the_pools_wait(
    postgres: tuple[EmbeddedPostgres, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: during an outage each database call waited the pool's whole timeout, so
    an in-flight turn hung 30 s before its error event and a request 10 s before its
    503."""
    pg, url = postgres
    async with Database.from_url(url, max_size=2) as db:
        assert await _select_one(db) == 1
        pg.stop()
        monkeypatch.setattr(db.pool, "CHECK_IDLE_S", 0.0)  # as after a pause
        for _ in range(3):  # the first call, and those after it
            with pytest.raises((PoolTimeout, psycopg.OperationalError)):
                async with asyncio.timeout(HANG_S), db.pool.connection(timeout=60.0) as conn:
                    await conn.execute("SELECT 1")
        pg.start()
        async with asyncio.timeout(HANG_S):
            while not await db.ping():
                await asyncio.sleep(0.2)
        assert await _select_one(db) == 1


async def test_a_busy_pool_keeps_a_caller_waiting_past_the_outage_wait(
    postgres: tuple[EmbeddedPostgres, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pool whose connections are all lent is busy, not down: its caller waits for one
    rather than getting a 503 after the outage's short wait."""
    _, url = postgres
    async with Database.from_url(url, max_size=1) as db:
        monkeypatch.setattr(db.pool, "OUTAGE_WAIT_S", 0.1)
        held = await db.pool.getconn()

        async def give_back_later() -> None:
            await asyncio.sleep(1.0)  # ten times the outage's wait
            await db.pool.putconn(held)

        returned = asyncio.ensure_future(give_back_later())
        assert await _select_one(db) == 1
        await returned


#: The bound on each wait while the server is frozen: the watch's own is about 1.5 s
#: (``convrag.stores.stalls``); the rest is slack for a loaded machine.
FROZEN_WAIT_S = 4.0


async def test_a_frozen_server_ends_each_wait_on_it_within_seconds_then_serves_again(
    postgres: tuple[EmbeddedPostgres, str],
) -> None:
    """Every PostgreSQL process stopped (SIGSTOP): a query under way and each one after
    it fail with ``DatabaseStalled`` or ``PoolTimeout`` (a 503) within seconds, the ping
    says False as soon, and once the server runs again the pool serves at once."""
    pg, url = postgres
    freeze = PostgresFreeze(pg.pgdata.parent)
    async with Database.from_url(url, max_size=2) as db:
        assert await _select_one(db) == 1
        under_way = asyncio.ensure_future(db.turns.fetch_one("SELECT pg_sleep(0.3)"))
        freeze.begin()
        try:
            t0 = time.monotonic()
            with pytest.raises(DatabaseStalled):
                await under_way
            assert time.monotonic() - t0 < FROZEN_WAIT_S
            for _ in range(3):
                t0 = time.monotonic()
                with pytest.raises((DatabaseStalled, PoolTimeout)):
                    await _select_one(db)
                assert time.monotonic() - t0 < FROZEN_WAIT_S
            t0 = time.monotonic()
            assert await db.ping(timeout=1.5) is False
            assert time.monotonic() - t0 < FROZEN_WAIT_S
        finally:
            freeze.end()
        async with asyncio.timeout(HANG_S):
            while not await db.ping():
                await asyncio.sleep(0.2)
        assert await _select_one(db) == 1


async def test_a_slow_query_on_a_live_server_is_not_taken_for_a_stall(
    postgres: tuple[EmbeddedPostgres, str],
) -> None:
    """A query that runs longer than the watch's suspicion (the server answers its
    probe) goes on to its end: only the server's own statement_timeout ends it."""
    _, url = postgres
    async with Database.from_url(url, max_size=2) as db:
        row = await db.turns.fetch_one("SELECT pg_sleep(2.5), 7 AS seven")
        assert row is not None and row["seven"] == 7
    async with Database.from_url(url, max_size=2, statement_timeout_s=0.5) as db:
        with pytest.raises(psycopg.errors.QueryCanceled):
            await db.turns.fetch_one("SELECT pg_sleep(2.5)")
        assert await _select_one(db) == 1


async def test_a_probe_held_up_by_this_process_is_not_taken_for_a_stall(
    postgres: tuple[EmbeddedPostgres, str],
) -> None:
    """The event loop held by other work (a batch of embeddings on a loaded machine)
    longer than a probe's wait: the live server's reply is read once the loop is free,
    so the probe counts it as answered and nothing is ended; a frozen server still
    goes unanswered."""
    pg, url = postgres
    watch = StallWatch(url, {})
    loop = asyncio.get_running_loop()
    loop.call_soon(time.sleep, StallWatch.PROBE_S + 0.2)  # the loop held as the probe starts
    assert await watch._probe_once() is True
    freeze = PostgresFreeze(pg.pgdata.parent)
    freeze.begin()
    try:
        assert await watch._probe_once() is False
    finally:
        freeze.end()
    await watch.close()
