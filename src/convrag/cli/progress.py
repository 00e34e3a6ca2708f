"""Progress of long commands: a bar on a terminal, a line every few seconds in a log."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from convrag.cli.base import err


@dataclass
class _LogTask:
    description: str
    total: float | None
    done: float = 0.0
    started: float = field(default_factory=time.monotonic)
    printed_at: float | None = None
    printed_done: float | None = None


class _LogProgress:
    """Progress where stderr is not a terminal (a log file, a pipe, CI). rich draws its
    bar there only when the work ends, so a long ingest would print nothing for minutes:
    this prints a line per task when it moves, at most every ``early_every_s`` seconds
    in its first ``early_s`` seconds and every ``every_s`` after, and when it is done.
    Used as a context manager, it also prints the unfinished tasks when none moved for
    that long (a batch being chunked, a model loading): a log never goes quiet."""

    def __init__(
        self, unit: str, every_s: float = 10.0, early_every_s: float = 2.0, early_s: float = 60.0
    ) -> None:
        self.unit = f" {unit}" if unit else ""
        self.every_s = every_s
        self.early_every_s = early_every_s
        self.early_s = early_s
        self._tasks: list[_LogTask] = []
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> _LogProgress:
        self._beat = threading.Thread(target=self._heartbeat, name="progress", daemon=True)
        self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
        with self._lock:
            for task in self._tasks:
                if task.printed_done != task.done:
                    self._print(task)

    def add_task(self, description: str, total: float | None = None) -> TaskID:
        with self._lock:
            self._tasks.append(_LogTask(description, total))
            return TaskID(len(self._tasks) - 1)

    def update(
        self, task_id: TaskID, *, completed: float | None = None, total: float | None = None
    ) -> None:
        with self._lock:
            task = self._tasks[task_id]
            if total is not None:
                task.total = total
            if completed is not None:
                task.done = completed
            finished = task.total is not None and task.done >= task.total
            if finished or task.printed_at is None or self._due(task):
                self._print(task)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        with self._lock:
            self.update(task_id, completed=self._tasks[task_id].done + advance)

    def _due(self, task: _LogTask) -> bool:
        """Whether ``task`` was last printed long enough ago to print again."""
        now = time.monotonic()
        every = self.early_every_s if now - task.started < self.early_s else self.every_s
        since = task.printed_at if task.printed_at is not None else task.started
        return now - since >= min(every, self.every_s)

    def _heartbeat(self) -> None:
        while not self._stop.wait(min(0.25, self.early_every_s / 2)):
            with self._lock:
                for task in self._tasks:
                    unfinished = task.total is None or task.done < task.total
                    if unfinished and self._due(task):
                        self._print(task)

    def _print(self, task: _LogTask) -> None:
        of = f"/{task.total:.0f}" if task.total else ""
        share = f" ({100 * task.done / task.total:.0f}%)" if task.total else ""
        elapsed = time.monotonic() - task.started
        print(
            f"{task.description}: {task.done:.0f}{of}{self.unit}{share}, {elapsed:.0f} s"
            f"{_pace(task.done, task.total, elapsed)}",
            file=sys.stderr,
            flush=True,
        )
        task.printed_at, task.printed_done = time.monotonic(), task.done


def _pace(done: float, total: float | None, elapsed: float) -> str:
    """ ", 2.5/s, about 40 s left" of work ``done`` of ``total`` in ``elapsed`` seconds:
    its rate so far, and the rest's time at that rate (none while nothing is done)."""
    if done <= 0 or elapsed <= 0:
        return ""
    rate = done / elapsed
    left = f", about {(total - done) / rate:.0f} s left" if total and total > done else ""
    return f", {rate:.3g}/s{left}"


class _RateColumn(ProgressColumn):
    """A task's rate (rich's ``Task.speed``: over its last 30 s), as "12.5/s"."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:.3g}/s", style="progress.data.speed")


def progress_bar(unit: str = "", *, quiet: bool = False) -> Progress | _LogProgress:
    """Progress on stderr for long work, each task labelled by its description: a live
    bar on a terminal, periodic lines elsewhere; each with its rate and the time its rest
    should take at that rate."""
    if not err.is_terminal and not quiet:
        return _LogProgress(unit)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        _RateColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        disable=quiet,
    )


class IngestProgress:
    """An ingest's progress on a :func:`progress_bar`, each count against a total known
    before it moves: documents chunked (all of them first), then chunks embedded (their
    total counted once every document is chunked, before the first is embedded; one
    large file shows its chunks moving long before its document is stored) and
    documents stored. :meth:`chunked`, :meth:`counted`, :meth:`chunks` and
    :meth:`documents` are the callbacks of :func:`convrag.ingest.ingest_documents`."""

    def __init__(self, bar: Progress | _LogProgress, documents: int) -> None:
        self.bar = bar
        self._chunked = bar.add_task("documents chunked", total=documents)
        bar.update(self._chunked, completed=0)  # at once: the first batch takes a while
        self._count = documents
        self._documents: TaskID | None = None
        self._chunks: TaskID | None = None
        """Added once counted: its clock (and so its rate) starts there, not while the
        ingest process loads its model and chunks."""
        self._seen: dict[str, int] = {}
        self._done = 0

    def chunked(self, n: int) -> None:
        self.bar.advance(self._chunked, n)

    def counted(self, chunks: int) -> None:
        if chunks:
            self._chunks = self.bar.add_task("chunks embedded", total=chunks)
            self.bar.update(self._chunks, completed=0)
        self._documents = self.bar.add_task("documents stored", total=self._count)

    def documents(self, n: int) -> None:
        if self._documents is not None:
            self.bar.advance(self._documents, n)

    async def chunks(self, document_id: str, done: int, total: int) -> None:
        was_done = self._seen.get(document_id, 0)
        if done < total:
            self._seen[document_id] = done
        else:  # done: it reports no more
            self._seen.pop(document_id, None)
        self._done += done - was_done
        if self._chunks is not None:
            self.bar.update(self._chunks, completed=self._done)
