"""The connection pool: idle connections are checked before a loan, busy ones are not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from psycopg_pool import AsyncConnectionPool

from convrag.stores.database import Database
from convrag.stores.embedded import EmbeddedPostgres
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
