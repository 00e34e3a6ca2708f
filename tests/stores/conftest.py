"""The relational store's tests run twice: on the embedded PostgreSQL, and on a PostgreSQL
server from Debian's ``postgresql`` package (the kind a deployment points
``DATABASE_URL`` at), started for the session in a directory of its own.

``scripts/test.sh`` installs that package when it is missing; where it cannot be had, the
server half is skipped and says why. ``CONVRAG_SKIP_SERVER_POSTGRES=1`` skips it too.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg import AsyncConnection
from psycopg.rows import DictRow

from convrag.services import Services
from convrag.stores.database import Database
from tests.serving import free_port


def _server_bin() -> Path | None:
    """The newest PostgreSQL server binaries of Debian's packages, if installed."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"), key=lambda p: int(p.parts[-3])
    )
    return found[-1].parent if found else None


def _runuser() -> str | None:
    """``runuser``, also where ``PATH`` lacks the sbin directories (``env -i``)."""
    found = shutil.which("runuser")
    if found is not None:
        return found
    return next((p for p in ("/usr/sbin/runuser", "/sbin/runuser") if os.access(p, os.X_OK)), None)


def _as_server_user(args: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the package's ``postgres``."""
    if os.geteuid() != 0:
        return args
    runuser = _runuser()
    if runuser is None:
        pytest.skip("running as root, and no runuser (util-linux) to run PostgreSQL as postgres")
    return [runuser, "-u", "postgres", "--", *args]


@pytest.fixture(scope="session")
def server_postgres_url() -> Iterator[str]:
    """A running Debian PostgreSQL server for the session; its URL (trust auth, local)."""
    if os.environ.get("CONVRAG_SKIP_SERVER_POSTGRES") == "1":
        pytest.skip("CONVRAG_SKIP_SERVER_POSTGRES=1")
    bindir = _server_bin()
    if bindir is None:
        pytest.skip("Debian's postgresql package is not installed (scripts/test.sh installs it)")
    # Under /tmp, not pytest's root-only temporary tree: the server user must reach it.
    home = Path(tempfile.mkdtemp(prefix="convrag-pgserver-"))
    data, log = home / "data", home / "server.log"
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(home, ignore_errors=True)
            pytest.skip("running as root, and there is no postgres user to run PostgreSQL as")
        os.chown(home, user.pw_uid, user.pw_gid)
    port = free_port()
    subprocess.run(
        _as_server_user(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "convrag",
                "-E",
                "UTF8",
                "--no-sync",
            ]
        ),
        check=True,
        capture_output=True,
    )
    subprocess.run(
        _as_server_user(
            [
                str(bindir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(log),
                "-w",
                "-o",
                f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
    try:
        yield f"postgresql://convrag@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            _as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]),
            check=False,
            capture_output=True,
        )
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
async def server_db(server_postgres_url: str) -> AsyncIterator[Database]:
    async with Database.from_url(server_postgres_url) as db:
        await db.setup()
        yield db


@pytest.fixture(params=["embedded", "server"])
def db(request: pytest.FixtureRequest, services: Services) -> Database:
    """The store under test: the embedded PostgreSQL's, then a Debian server's."""
    if request.param == "embedded":
        return services.db
    database: Database = request.getfixturevalue("server_db")
    return database


async def until_waiting_on_a_lock(
    watcher: AsyncConnection[DictRow], task: asyncio.Task[Any], statement: str
) -> None:
    """Return once ``task`` has ended or a session runs a statement holding ``statement``
    that waits for a lock (another transaction holds the row it needs), polling
    ``pg_stat_activity`` for up to 5 s: how a test lets a statement reach a lock before
    the lock holder goes on."""
    for _ in range(500):
        waiting = await (
            await watcher.execute(
                "SELECT count(*) AS n FROM pg_stat_activity "
                "WHERE wait_event_type = 'Lock' AND query LIKE %s",
                (f"%{statement}%",),
            )
        ).fetchone()
        if task.done() or (waiting and waiting["n"]):
            return
        await asyncio.sleep(0.01)
