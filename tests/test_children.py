"""Child processes do not outlive their parent: the ingest child dies with a parent killed
by ``kill -9``, and a start stops the children a crashed process left, never a process
that merely reuses a recorded pid."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from convrag.children import ChildRecords, process_start
from convrag.services import INGEST_PIDS
from convrag.stores.database import Database
from tests.serving import database_url, free_port, scratch_dir, spawn

#: Bound on every wait for a process to go (nothing asserts on wall-clock time).
GONE_TIMEOUT_S = 30.0


def _gone(pid: int, start: int) -> bool:
    """Whether the process ``pid`` that started at ``start`` has exited (within the bound)."""
    deadline = time.monotonic() + GONE_TIMEOUT_S
    while time.monotonic() < deadline:
        if process_start(pid) != start:
            return True
        time.sleep(0.1)
    return False


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])


def _dead_pid() -> int:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    return ended.pid


def _write_record(directory: Path, parent: tuple[int, int], children: list[int]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{parent[0]}.json"
    entries = [{"pid": pid, "start": process_start(pid)} for pid in children]
    path.write_text(
        json.dumps({"parent": {"pid": parent[0], "start": parent[1]}, "children": entries})
    )
    return path


@pytest.fixture
def records_dir(tmp_path: Path) -> Path:
    return tmp_path / INGEST_PIDS


def test_a_start_kills_the_children_a_dead_parent_left_and_drops_its_record(
    records_dir: Path,
) -> None:
    orphan = _sleeper()
    try:
        record = _write_record(records_dir, (_dead_pid(), 1), [orphan.pid])
        assert ChildRecords(records_dir).reap() == [orphan.pid]
        assert orphan.wait(GONE_TIMEOUT_S) == -signal.SIGKILL
        assert not record.exists()
    finally:
        orphan.kill()


def test_the_children_of_a_live_parent_are_left_alone(records_dir: Path) -> None:
    child = _sleeper()
    try:
        me = (os.getpid(), process_start(os.getpid()) or 0)
        record = _write_record(records_dir, me, [child.pid])
        assert ChildRecords(records_dir).reap() == []
        assert child.poll() is None and record.exists()
    finally:
        child.kill()


def test_a_recorded_pid_now_given_to_another_process_is_not_killed(records_dir: Path) -> None:
    other = _sleeper()
    try:
        record = _write_record(records_dir, (_dead_pid(), 1), [other.pid])
        raw = json.loads(record.read_text())
        raw["children"][0]["start"] -= 1  # the recorded child started at another time
        record.write_text(json.dumps(raw))
        assert ChildRecords(records_dir).reap() == []
        assert other.poll() is None and not record.exists()
    finally:
        other.kill()


def test_a_process_records_its_children_and_forgets_them(records_dir: Path) -> None:
    child = _sleeper()
    try:
        records = ChildRecords(records_dir)
        records.record([child.pid, _dead_pid()])
        raw = json.loads((records_dir / f"{os.getpid()}.json").read_text())
        assert raw["children"] == [{"pid": child.pid, "start": process_start(child.pid)}]
        records.forget()
        assert list(records_dir.iterdir()) == []
    finally:
        child.kill()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_that_asked_to_die_with_its_parent_dies_when_the_parent_is_killed(
    tmp_path: Path,
) -> None:
    said = tmp_path / "child.pid"
    child_code = (
        "import os, sys, time\n"
        "from convrag.children import die_with_parent\n"
        "die_with_parent(int(sys.argv[1]))\n"
        f"open({str(said)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(300)\n"
    )
    parent_code = (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {child_code!r}, str(os.getpid())])\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code])
    try:
        deadline = time.monotonic() + GONE_TIMEOUT_S
        while not (said.exists() and said.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(said.read_text())
        start = process_start(child)
        assert start is not None
        parent.kill()
        parent.wait(10)
        assert _gone(child, start), "the child outlived its parent"
    finally:
        parent.kill()
        if said.exists() and said.read_text():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(said.read_text()), signal.SIGKILL)


def test_a_killed_serve_takes_its_ingest_child_along_and_a_start_reaps_older_orphans(
    tmp_path: Path,
) -> None:
    """A real ``convrag serve``: an orphan recorded by a crashed process is stopped at the
    start; the ingest child of an upload (and its resource tracker) dies with a ``kill -9``
    of the service; the next start drops the killed service's record."""
    with scratch_dir("children") as data_dir:
        env = {**os.environ, "CONVRAG_DATA_DIR": str(data_dir), "INGEST_EMBEDDING": "process"}
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "LLM_MODEL", "DATABASE_URL"):
            env.pop(name, None)
        pids = data_dir / INGEST_PIDS
        orphan = _sleeper()
        try:
            stale = _write_record(pids, (_dead_pid(), 1), [orphan.pid])
            server = spawn("serve", free_port(), tmp_path / "serve.log", env)
            server.wait_ready()
            assert orphan.wait(GONE_TIMEOUT_S) == -signal.SIGKILL, server.tail()
            assert not stale.exists()
            assert "a crashed convrag process left running" in server.tail()

            _upload_and_wait(server.url, data_dir)
            record = json.loads((pids / f"{server.proc.pid}.json").read_text())
            children = [(c["pid"], c["start"]) for c in record["children"]]
            # the ingest child, the reader child (the upload's file) and the resource tracker
            assert len(children) == 3, record
            assert all(process_start(pid) == start for pid, start in children)
            server.kill()
            for pid, start in children:
                assert _gone(pid, start), f"process {pid} outlived the killed service"

            again = spawn("serve again", free_port(), tmp_path / "serve.log", env)
            again.wait_ready()
            assert not (pids / f"{server.proc.pid}.json").exists()
            assert again.stop() != -signal.SIGKILL, again.tail()
        finally:
            orphan.kill()


def _upload_and_wait(url: str, data_dir: Path) -> None:
    """Upload a small file through the API and wait until it is ingested."""
    import asyncio

    async def create_key() -> str:
        async with Database.from_url(database_url(data_dir), max_size=1) as db:
            return await db.workspaces.create_api_key(f"ws-{uuid.uuid4().hex[:8]}")

    headers = {"Authorization": f"Bearer {asyncio.run(create_key())}"}
    with httpx.Client(timeout=60) as client:
        sent = client.post(
            f"{url}/v1/documents",
            files={"file": ("zoo.txt", b"The zoo opens at nine every morning.", "text/plain")},
            headers=headers,
        )
        assert sent.status_code == 202, sent.text
        document = sent.json()["id"]
        deadline = time.monotonic() + 120
        status = "processing"
        while status == "processing" and time.monotonic() < deadline:
            time.sleep(0.2)
            status = client.get(f"{url}/v1/documents/{document}", headers=headers).json()["status"]
        assert status == "ready", status
