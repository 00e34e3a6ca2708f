"""A command that starts the stores itself (no service runs on its data directory): it
says so at once and shows what it waits for, and its embedded servers start while the
rest of the command loads.

Of the seconds such a command takes, most went to steps one after another that need not
wait for each other: importing the stores' and the graph's libraries (CPU in this
process), starting Milvus Lite and PostgreSQL (other processes) and loading the
embedding model. :func:`starting_here` starts the servers in threads before those
imports; :func:`convrag.services.open_services` then joins them (a second holder of a
running server) while the model loads beside them.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.status import Status

from convrag.cli.base import err

if TYPE_CHECKING:
    from convrag.config import Settings
    from convrag.stores.embedded import EmbeddedServer

HEARTBEAT_S = 2.0
"""Where stderr is no terminal: the longest a wait goes without a line."""


class Waiting:
    """What a command waits for before its work starts, on stderr: a line as each step
    begins; then, where stderr is no terminal (a log, a pipe), a "still ..." line
    whenever nothing was said for ``every_s`` seconds, and on a terminal a spinner
    naming the step. :meth:`done` ends it (the work's own progress takes over)."""

    def __init__(self, *, quiet: bool = False, every_s: float = HEARTBEAT_S) -> None:
        self.quiet = quiet
        self.every_s = every_s
        self._step = ""
        self._started = self._said_at = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._status: Status | None = None

    def __enter__(self) -> Waiting:
        if self.quiet:
            return self
        if err.is_terminal:
            self._status = err.status("", spinner="dots")
            self._status.start()
        else:
            self._thread = threading.Thread(target=self._beat, name="waiting", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done()

    def say(self, step: str) -> None:
        """Say that ``step`` begins ("starting the vector index ...")."""
        if self.quiet or self._stop.is_set():
            return
        with self._lock:
            err.print(escape(step), style="dim")
            self._step, self._said_at = step, time.monotonic()
        if self._status is not None:
            self._status.update(escape(step.rstrip(". ")))

    def done(self) -> None:
        """Stop saying anything more (idempotent)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _beat(self) -> None:
        while not self._stop.wait(min(0.25, self.every_s)):
            with self._lock:
                now = time.monotonic()
                if self._step and now - self._said_at >= self.every_s:
                    still = self._step.rstrip(". ")
                    err.print(escape(f"still {still} ({now - self._started:.0f} s)"), style="dim")
                    self._said_at = now


@contextlib.contextmanager
def starting_here(
    settings: Settings, *, vectors: bool, first: str, quiet: bool = False
) -> Iterator[Waiting]:
    """Start, in threads, the embedded servers that a command's stores need and no URL
    replaces (PostgreSQL; Milvus Lite too when ``vectors``) and hold them while the block
    runs, saying ``first`` at once when there is one to start (and each later step of
    the yielded :class:`Waiting`). The command's own opening of the stores joins them.

    A server that fails to start here is left to that opening, which starts it again
    and reports the failure as it would have without this."""
    from convrag.stores.embedded import EmbeddedPostgres, ManagedMilvusLite

    servers: list[EmbeddedServer] = []
    if settings.database_url is None:
        servers.append(EmbeddedPostgres(settings.data_dir))
    if vectors and settings.milvus_uri is None:
        servers.append(ManagedMilvusLite(settings.data_dir))
    threads = [threading.Thread(target=_start, args=(s,), daemon=True) for s in servers]
    for server, thread in zip(servers, threads, strict=True):
        atexit.register(server.stop)
        thread.start()
    try:
        with Waiting(quiet=quiet) as waiting:
            if servers:
                waiting.say(first)
            yield waiting
    finally:
        for thread in threads:
            thread.join()
        for server in reversed(servers):
            server.stop()
            atexit.unregister(server.stop)


def _start(server: EmbeddedServer) -> None:
    with contextlib.suppress(Exception):  # see starting_here: the opening reports it
        server.start()
