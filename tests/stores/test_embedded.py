"""The embedded servers: data survives restarts, holders share, stale pids are cleared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from convrag.stores.embedded import (
    EmbeddedPostgres,
    ManagedMilvusLite,
    _zombie,
    await_postmaster_reaped,
    prune_stale_pids,
)
from tests.serving import scratch_dir


@pytest.fixture
def scratch() -> Iterator[Path]:
    with scratch_dir("emb") as path:
        yield path


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


async def test_after_a_milvus_lite_restart_the_index_loads_its_collection_again(
    scratch: Path,
) -> None:
    """A restarted Milvus Lite has every collection released: reads, deletes and the
    health check load it again themselves instead of failing until a process restart."""
    import asyncio
    import signal

    from convrag.stores.vectors import VectorIndex, VectorRow

    def killed_and_restarted(pid: int) -> int:
        """Kill the child, and wait for its successor to answer (a busy machine can take
        a while between its start and its first answer)."""
        os.kill(pid, signal.SIGKILL)
        for _ in range(600):
            current = int(json.loads(state_file.read_text())["pid"])
            if current != pid and answers():
                return current
            time.sleep(0.1)
        pytest.fail("the Milvus Lite child was not restarted")

    def answers() -> bool:
        try:
            return bool(index.client.has_collection("chunks"))
        except Exception:
            return False

    async with ManagedMilvusLite.running(scratch, check_every_s=0.2) as uri:
        state_file = scratch / "milvus" / "server.json"
        index = VectorIndex.connect(uri, "chunks", 4, is_lite=True)
        try:
            index.setup()
            index.upsert("ws", [VectorRow("c1", "d1", "one", [1.0, 0.0, 0.0, 0.0])])
            pid = int(json.loads(state_file.read_text())["pid"])
            pid = await asyncio.to_thread(killed_and_restarted, pid)
            assert not index.client.is_loaded("chunks")
            assert index.chunk_ids_of_document("ws", "d1") == ["c1"]
            index.upsert("ws", [VectorRow("c2", "d2", "two", [0.0, 1.0, 0.0, 0.0])])
            await asyncio.to_thread(killed_and_restarted, pid)
            index.delete_document("ws", "d1")
            assert [h.chunk_id for h in index.dense_search("ws", [0, 1, 0, 0], 5)] == ["c2"]
            pid = int(json.loads(state_file.read_text())["pid"])
            await asyncio.to_thread(killed_and_restarted, pid)
            assert index.problem() is None and index.client.is_loaded("chunks")
        finally:
            index.client.close()


def test_health_reports_a_released_collection_that_cannot_be_loaded_as_unusable(
    scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convrag.stores.vectors import VectorIndex

    with ManagedMilvusLite(scratch) as uri:
        index = VectorIndex.connect(uri, "chunks", 4, is_lite=True)
        try:
            index.setup()
            index.client.release_collection("chunks")

            def refused(*_: object, **__: object) -> None:
                raise RuntimeError("loading refused")

            monkeypatch.setattr(index.client, "load_collection", refused)
            assert index.problem() == (
                "the Milvus collection 'chunks' is released and could not be loaded again"
            )
            assert index.ping() is False
            monkeypatch.undo()
            assert index.ping() is True
        finally:
            index.client.close()


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


def _postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def _answers(url: str) -> bool:
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=2) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)
    except psycopg.OperationalError:
        return False


async def test_a_stopped_postgres_is_started_again_at_the_same_url_and_keeps_its_data(
    scratch: Path,
) -> None:
    """The operator's repro: ``kill -INT`` of the postmaster (a fast shutdown) under a
    running service is followed by a fresh postmaster, found at the same URL."""
    import asyncio
    import signal

    async with EmbeddedPostgres.running(scratch, check_every_s=0.2) as url:
        pgdata = scratch / "pg"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (x int)")
            conn.execute("INSERT INTO kept VALUES (7)")
        first = _postmaster_pid(pgdata)
        assert first is not None
        os.kill(first, signal.SIGINT)
        for _ in range(600):  # until the supervisor has started it again
            await asyncio.sleep(0.1)
            current = _postmaster_pid(pgdata)
            if current not in (None, first) and await asyncio.to_thread(_answers, url):
                break
        assert _postmaster_pid(pgdata) not in (None, first)
        with psycopg.connect(url, autocommit=True) as conn:
            assert conn.execute("SELECT x FROM kept").fetchone() == (7,)
    assert not _postmaster_running(pgdata)


def test_a_killed_postgres_is_started_again_for_a_process_without_an_event_loop(
    scratch: Path,
) -> None:
    """``held`` (the parent of ``serve --workers``, whose workers only have the URL)
    revives it too, also after a SIGKILL left its pid file and shared memory behind."""
    import signal
    import time

    with EmbeddedPostgres.held(scratch, check_every_s=0.2) as url:
        pgdata = scratch / "pg"
        first = _postmaster_pid(pgdata)
        assert first is not None
        os.kill(first, signal.SIGKILL)
        for _ in range(600):
            time.sleep(0.1)
            if _postmaster_pid(pgdata) not in (None, first) and _answers(url):
                break
        assert _postmaster_pid(pgdata) not in (None, first)
        assert _answers(url)
    assert not _postmaster_running(pgdata)


def _pid_file(tmp_path: Path, pid: int) -> Path:
    """A PGDATA whose ``postmaster.pid`` names ``pid``."""
    pgdata = tmp_path / "pg"
    pgdata.mkdir()
    (pgdata / "postmaster.pid").write_text(f"{pid}\n{pgdata}\n0\n5432\n{pgdata}\n\n0 0\nready\n")
    return pgdata


def _until_zombie(pid: int) -> None:
    for _ in range(200):
        if _zombie(pid):
            return
        time.sleep(0.05)
    pytest.fail(f"{pid} did not become a zombie")


def test_a_revive_waits_for_a_killed_postmaster_until_its_parent_reaps_it(
    tmp_path: Path,
) -> None:
    """A killed postmaster stays a zombie until its parent reaps it (init, after a
    moment under some): pgserver takes a zombie for a running server and PostgreSQL
    refuses to start beside its pid, so a revive waits for it, and says so when it
    waits in vain."""
    import signal

    # A parent that does not reap its child until it exits itself (then init does):
    # it lives until the test ends it, however loaded the machine. Not a shell: bash
    # reaps a background job on SIGCHLD if the kill lands before its exec.
    forker = (
        "import os, sys, time\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    os.execvp('sleep', ['sleep', '60'])\n"
        "print(pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", forker], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    killed = int(parent.stdout.readline())
    os.kill(killed, signal.SIGKILL)
    _until_zombie(killed)
    pgdata = _pid_file(tmp_path, killed)
    with pytest.raises(RuntimeError, match="not reaped"):
        await_postmaster_reaped(pgdata, 0.2)
    parent.kill()
    parent.wait(10)
    await_postmaster_reaped(pgdata, 30.0)
    assert not _zombie(killed)


def test_a_killed_postmaster_of_this_process_is_reaped_by_the_revive(tmp_path: Path) -> None:
    """This process reaps its own killed child (say, running as a container's pid 1)."""
    child = subprocess.Popen(["sleep", "60"])
    child.kill()
    _until_zombie(child.pid)
    await_postmaster_reaped(_pid_file(tmp_path, child.pid), 0.0)
    assert not _zombie(child.pid)


def test_a_revive_right_after_a_sigkill_starts_postgres_again(scratch: Path) -> None:
    """Every PostgreSQL process SIGKILLed, then a revive at once: the killed postmaster
    may still be a zombie (its parent, init, reaps it in its own time), which pgserver
    took for a running server; the revive reported a restart and started nothing, and
    the server stayed down until the supervisor's next check."""
    from convrag.stores.embedded import postmaster_alive
    from convrag.testing.faults import PostgresKill

    pg = EmbeddedPostgres(scratch)
    url = pg.start()
    try:
        kill = PostgresKill(scratch)
        kill.begin()
        for _ in range(200):  # until it is dead (a zombie, or gone)
            if not postmaster_alive(pg.pgdata):
                break
            time.sleep(0.01)
        assert pg.revive()
        assert postmaster_alive(pg.pgdata)
        assert _postmaster_pid(pg.pgdata) != kill.killed[0]
        assert _answers(url)
    finally:
        pg.stop()
    assert not _postmaster_running(scratch / "pg")


def test_of_two_holders_one_revives_postgres_and_the_other_finds_it_running(
    scratch: Path,
) -> None:
    """Holders never fight over a revive, and a handle that has left revives nothing."""
    from convrag.testing.faults import stop_postgres

    first, second = EmbeddedPostgres(scratch), EmbeddedPostgres(scratch)
    url = first.start()
    assert second.start() == url
    stop_postgres(scratch)
    assert not _answers(url)
    assert first.revive() is True
    assert second.revive() is False
    assert _answers(url)
    second.stop()
    assert second.revive() is False
    assert _answers(url)  # the first handle still holds it
    first.stop()
    assert not _postmaster_running(first.pgdata)
    assert first.revive() is False
    assert not _postmaster_running(first.pgdata)
