"""Child processes that must not outlive the process that started them.

The ingest child (:class:`~convrag.embeddings.ProcessEmbedder`) is a ``multiprocessing``
worker: a parent killed by ``kill -9`` (or the OOM killer) ran none of its cleanup, and
the child, with the ``multiprocessing`` resource tracker it keeps open, lived on as an
orphan holding a model's memory. Two guards, for a crash neither can prevent:

* :func:`die_with_parent`, in the child: Linux delivers SIGKILL to it when its parent
  dies (``prctl(PR_SET_PDEATHSIG)``); the resource tracker then reads the end of its pipe
  and exits by itself.
* :class:`ChildRecords`, in the parent: each process records its children's pids (with
  their start times, so that a recycled pid is never taken for one) in a file of the data
  directory, and removes it when it stops them; a start kills those a dead parent left
  (a platform without ``PR_SET_PDEATHSIG``, a child started by an older version).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import logging
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
"""``prctl``'s option that names the signal a process gets when its parent dies."""

TRACKER_EXIT_WAIT_S = 2.0
"""How long a reap waits for an orphan's resource tracker to exit by itself (it unlinks
what its children left registered) before it is killed."""


def process_start(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/PID/stat``'s 22nd field),
    or None when no such process runs (or there is no ``/proc``): with the pid, it names
    one process, where a pid alone may have been given to another since."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    if not fields or fields[0] == "Z":  # a zombie has exited already
        return None
    return int(fields[19])


def die_with_parent(parent: int) -> None:
    """Have this process killed when its parent dies (Linux; elsewhere a no-op, and
    :class:`ChildRecords` reaps it at the next start). Call it first thing in a child.

    The parent is the *thread* that started the child: the ingest child is started from
    the event loop's thread, which lives as long as the services. A parent that died
    before the call leaves this process to ``init`` already: it exits at once."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter for the size from which a block comes from ``mmap``."""

MMAP_THRESHOLD = 4 << 20
"""In the ingest child, blocks of this many bytes or more (a model call's larger tensors)
come straight from the kernel and go back to it when freed. At 1 MiB it cost 10 % more
CPU a call; at 4 MiB the whole upload ran no slower (BENCHMARKS.md, 2026-12-07 (v))."""


@functools.cache
def _own_c_library() -> ctypes.CDLL:
    """The process's own symbols, its C library's among them: opened once, not at every
    model call of the ingest child."""
    return ctypes.CDLL(None)


def large_blocks_from_kernel() -> None:
    """Fix glibc's ``mmap`` threshold at :data:`MMAP_THRESHOLD` (elsewhere a no-op). Left
    to itself it rises to the size of each large block freed, so a model call's tensors
    soon came from the heaps, whose freed holes later calls' tensors did not fit: over a
    10 MiB upload the ingest child grew past 1 GiB."""
    mallopt = getattr(_own_c_library(), "mallopt", None)
    if mallopt is not None:
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)


def give_back_freed() -> None:
    """Return the C heaps' free pages to the kernel (glibc's ``malloc_trim``; elsewhere a
    no-op). The ingest child calls it after each model call, so that what a call freed
    does not stay in its RSS until the next."""
    trim = getattr(_own_c_library(), "malloc_trim", None)
    if trim is not None:
        trim(0)


@dataclass(frozen=True)
class _Process:
    pid: int
    start: int

    def alive(self) -> bool:
        return process_start(self.pid) == self.start


class ChildRecords:
    """The pid files of the processes that keep children in ``directory``: one
    ``<parent pid>.json`` per parent, naming it and its children, each with its start time.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._own = directory / f"{os.getpid()}.json"

    def record(self, children: list[int]) -> None:
        """Record this process's running children (replacing what it recorded before)."""
        me = process_start(os.getpid())
        known = [(pid, process_start(pid)) for pid in children]
        entries = [{"pid": pid, "start": start} for pid, start in known if start is not None]
        if me is None or not entries:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self._own.with_suffix(".tmp")
        tmp.write_text(
            json.dumps({"parent": {"pid": os.getpid(), "start": me}, "children": entries})
        )
        tmp.replace(self._own)

    def forget(self) -> None:
        """This process has stopped its children: drop its record."""
        self._own.unlink(missing_ok=True)

    def reap(self) -> list[int]:
        """Kill the children that parents no longer running left, and drop their records;
        the pids killed. A record of a live parent (another process sharing the data
        directory) is left alone."""
        killed: list[int] = []
        for path in sorted(self.directory.glob("*.json")) if self.directory.is_dir() else []:
            record = _read(path)
            if record is None:
                path.unlink(missing_ok=True)
                continue
            parent, children = record
            if parent.alive():
                continue
            killed += _kill_all(children)
            path.unlink(missing_ok=True)
        return killed


def _read(path: Path) -> tuple[_Process, list[_Process]] | None:
    """A record's parent and children; None for an unreadable file (a crash mid-write)."""
    try:
        raw = json.loads(path.read_text())
        parent = _Process(int(raw["parent"]["pid"]), int(raw["parent"]["start"]))
        children = [_Process(int(c["pid"]), int(c["start"])) for c in raw["children"]]
    except (OSError, KeyError, TypeError, ValueError):
        return None
    return parent, children


def _kill_all(children: list[_Process]) -> list[int]:
    """SIGKILL the ``children`` still running: the workers (the ingest and reader children)
    at once, the last of several (the resource tracker, which exits by itself once no
    worker holds its pipe) after :data:`TRACKER_EXIT_WAIT_S`; the pids killed."""
    killed = []
    for i, child in enumerate(children):
        tracker = i > 0 and i == len(children) - 1
        deadline = time.monotonic() + (TRACKER_EXIT_WAIT_S if tracker else 0.0)
        while child.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if child.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(child.pid, signal.SIGKILL)
                killed.append(child.pid)
    return killed
