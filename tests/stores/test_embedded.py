"""The embedded servers: data survives restarts, holders share, stale pids are cleared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psycopg
import pytest

from convrag.stores.embedded import EmbeddedPostgres, ManagedMilvusLite, prune_stale_pids


@pytest.fixture
def scratch() -> Path:
    path = Path("/tmp") / f"convrag-emb-{uuid.uuid4().hex[:8]}"
    path.mkdir()
    return path


def _postmaster_running(pgdata: Path) -> bool:
    pid_file = pgdata / "postmaster.pid"
    if not pid_file.exists():
        return False
    pid = int(pid_file.read_text().splitlines()[0])
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_postgres_data_survives_a_restart_and_it_stops_cleanly(scratch: Path) -> None:
    pg = EmbeddedPostgres(scratch)
    url = pg.start()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (x int)")
        conn.execute("INSERT INTO t VALUES (42)")
    pg.stop()
    assert not _postmaster_running(pg.pgdata)
    url = pg.start()
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT x FROM t").fetchone() == (42,)
    pg.stop()
    assert not _postmaster_running(pg.pgdata)


def test_stale_holder_pids_are_pruned(scratch: Path) -> None:
    pgdata = scratch / "pg"
    pgdata.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (pgdata / ".handle_pids.json").write_text(json.dumps([dead.pid, os.getppid()]))
    assert prune_stale_pids(pgdata) == [dead.pid]
    assert json.loads((pgdata / ".handle_pids.json").read_text()) == [os.getppid()]


def test_a_postgres_holder_killed_by_a_signal_does_not_keep_the_server_alive(
    scratch: Path,
) -> None:
    code = (
        "import sys, os, signal; from pathlib import Path;"
        "from convrag.stores.embedded import EmbeddedPostgres;"
        f"EmbeddedPostgres(Path('{scratch}')).start(); os.kill(os.getpid(), signal.SIGKILL)"
    )
    subprocess.run([sys.executable, "-c", code], check=False)
    pg = EmbeddedPostgres(scratch)
    pg.start()  # prunes the killed holder
    pg.stop()  # now the last holder: the postmaster stops
    assert not _postmaster_running(pg.pgdata)


def test_milvus_lite_server_is_shared_and_stopped_by_the_last_holder(scratch: Path) -> None:
    first = ManagedMilvusLite(scratch)
    uri = first.start()
    second = ManagedMilvusLite(scratch)
    assert second.start() == uri
    state = json.loads(first.state_file.read_text())
    first.stop()
    assert os.path.exists(first.state_file)  # a holder remains
    second.stop()
    assert not first.state_file.exists()
    with pytest.raises(ProcessLookupError):
        for _ in range(50):
            os.kill(state["pid"], 0)
            os.waitpid(state["pid"], os.WNOHANG)
            import time

            time.sleep(0.05)


def test_the_last_live_holder_stops_postgres_even_after_a_killed_holder_joined(
    scratch: Path,
) -> None:
    pg = EmbeddedPostgres(scratch)
    pg.start()
    code = (
        "import os, signal; from pathlib import Path;"
        "from convrag.stores.embedded import EmbeddedPostgres;"
        f"EmbeddedPostgres(Path('{scratch}')).start(); os.kill(os.getpid(), signal.SIGKILL)"
    )
    subprocess.run([sys.executable, "-c", code], check=False)
    pg.stop()
    assert not _postmaster_running(pg.pgdata)


async def test_a_killed_milvus_lite_child_is_restarted_at_the_same_address(scratch: Path) -> None:
    import asyncio
    import signal

    from pymilvus import MilvusClient

    async with ManagedMilvusLite.running(scratch, check_every_s=0.2) as uri:
        state_file = scratch / "milvus" / "server.json"
        first = json.loads(state_file.read_text())["pid"]
        os.kill(first, signal.SIGKILL)
        second = first
        for _ in range(600):  # until the supervisor has respawned it
            await asyncio.sleep(0.1)
            second = json.loads(state_file.read_text())["pid"]
            if second != first:
                break
        assert second != first
        client = MilvusClient(uri=uri)
        assert client.list_collections() == []
        client.close()
    assert not state_file.exists()


def test_a_process_holding_postgres_twice_keeps_it_until_its_last_handle_leaves(
    scratch: Path,
) -> None:
    """``langgraph dev`` holds the server for its checkpointer while each run opens and
    closes services of its own: a run's end must not stop the server under it."""
    server = EmbeddedPostgres(scratch)
    url = server.start()
    for _ in range(3):
        run = EmbeddedPostgres(scratch)
        assert run.start() == url
        run.stop()
        assert _postmaster_running(server.pgdata)
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    server.stop()
    assert not _postmaster_running(server.pgdata)
