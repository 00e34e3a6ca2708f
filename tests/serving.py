"""Running ``convrag serve`` as a real subprocess in tests: free ports, bounded start and
stop, and a last-resort cleanup of the embedded servers a killed process leaves behind.

Shared by the tests that need whole processes (several workers, kills, store outages).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from convrag.stores.embedded import EmbeddedPostgres, ManagedMilvusLite, pid_alive

EXE = str(Path(sys.executable).with_name("convrag"))
START_TIMEOUT_S = 240.0
STOP_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """One ``convrag serve`` subprocess."""

    name: str
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        pytest.fail(f"{self.name} did not answer /healthz in {START_TIMEOUT_S} s:\n{self.tail()}")

    def stop(self) -> int:
        """SIGTERM, then SIGKILL (of its process group too) if it does not exit in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(10)

    def kill(self) -> None:
        """SIGKILL the server process alone, as a crash would: the embedded servers it
        started live on (they run in sessions of their own)."""
        self.proc.kill()
        self.proc.wait(10)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


def spawn(name: str, port: int, log: Path, env: dict[str, str], *args: str) -> Server:
    """Start ``convrag serve`` on 127.0.0.1:``port``, its output appended to ``log``."""
    with open(log, "ab") as fh:
        proc = subprocess.Popen(
            [EXE, "serve", "--host", "127.0.0.1", "--port", str(port), *args],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # the fallback SIGKILL reaches the workers too
        )
    return Server(name, port, proc, log)


@contextmanager
def scratch_dir(name: str) -> Iterator[Path]:
    """A new data directory under /tmp, short enough for PostgreSQL's Unix socket path
    (under 107 bytes), removed afterwards with whatever embedded servers it still runs:
    a test run leaves nothing behind on the disk."""
    path = Path(tempfile.mkdtemp(prefix=f"convrag-{name}-", dir="/tmp"))
    try:
        yield path
    finally:
        stop_orphans(path)
        shutil.rmtree(path, ignore_errors=True)


def stop_orphans(data_dir: Path) -> None:
    """Last resort after a failed test: stop the PostgreSQL or Milvus Lite server that no
    live process holds any more, by joining it (which drops dead holders) and leaving it
    as its last holder."""
    if (data_dir / "pg" / "postmaster.pid").exists():
        with EmbeddedPostgres(data_dir):
            pass
    if (data_dir / "milvus" / "server.json").exists():
        with ManagedMilvusLite(data_dir):
            pass


def postmaster_pid(data_dir: Path) -> int | None:
    """The pid of the embedded PostgreSQL under ``data_dir`` when one runs, else None."""
    try:
        pid = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None
    return pid if pid_alive(pid) else None


def milvus_pid(data_dir: Path) -> int | None:
    """The pid that ``milvus/server.json`` names for the Milvus Lite child, if any."""
    try:
        return int(json.loads((data_dir / "milvus" / "server.json").read_text())["pid"])
    except (FileNotFoundError, KeyError, ValueError):
        return None


def database_url(data_dir: Path) -> str:
    """The URL of the running embedded PostgreSQL under ``data_dir``, read from its
    ``postmaster.pid`` without joining it as a holder (a holder would keep it running
    after the server stops)."""
    lines = (data_dir / "pg" / "postmaster.pid").read_text().splitlines()
    return f"postgresql://postgres:@/postgres?host={lines[4]}"
