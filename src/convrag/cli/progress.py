"""Progress of long commands: a bar on a terminal, a line every few seconds in a log."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

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
    this prints a line per task at most every ``every_s`` seconds, and when it is done."""

    def __init__(self, unit: str, every_s: float = 10.0) -> None:
        self.unit = f" {unit}" if unit else ""
        self.every_s = every_s
        self._tasks: list[_LogTask] = []

    def __enter__(self) -> _LogProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        for task in self._tasks:
            if task.printed_done != task.done:
                self._print(task)

    def add_task(self, description: str, total: float | None = None) -> TaskID:
        self._tasks.append(_LogTask(description, total))
        return TaskID(len(self._tasks) - 1)

    def update(
        self, task_id: TaskID, *, completed: float | None = None, total: float | None = None
    ) -> None:
        task = self._tasks[task_id]
        if total is not None:
            task.total = total
        if completed is not None:
            task.done = completed
        finished = task.total is not None and task.done >= task.total
        due = task.printed_at is None or time.monotonic() - task.printed_at >= self.every_s
        if finished or due:
            self._print(task)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        self.update(task_id, completed=self._tasks[task_id].done + advance)

    def _print(self, task: _LogTask) -> None:
        of = f"/{task.total:.0f}" if task.total else ""
        share = f" ({100 * task.done / task.total:.0f}%)" if task.total else ""
        elapsed = time.monotonic() - task.started
        print(
            f"{task.description}: {task.done:.0f}{of}{self.unit}{share}, {elapsed:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        task.printed_at, task.printed_done = time.monotonic(), task.done


def progress_bar(unit: str = "", *, quiet: bool = False) -> Progress | _LogProgress:
    """Progress on stderr for long work, each task labelled by its description: a live
    bar on a terminal, periodic lines elsewhere."""
    if not err.is_terminal and not quiet:
        return _LogProgress(unit)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        console=err,
        disable=quiet,
    )
