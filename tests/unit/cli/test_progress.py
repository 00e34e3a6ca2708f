"""The CLI's progress: an ingest's chunks move, with their rate and an estimate."""

from __future__ import annotations

import pytest

from convrag.cli.progress import IngestProgress, _LogProgress, _pace


def test_pace_gives_the_rate_so_far_and_the_rests_time_at_it() -> None:
    assert _pace(100, 300, 50) == ", 2/s, about 100 s left"
    assert _pace(300, 300, 50) == ", 6/s"  # done: nothing left to estimate
    assert _pace(0, 300, 50) == ""  # nothing done yet: no rate


async def test_an_ingests_chunks_move_against_the_total_counted_before_embedding(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bar = _LogProgress("", every_s=0.0)
    shown = IngestProgress(bar, documents=2)
    shown.chunked(2)
    shown.counted(120)
    await shown.chunks("a", 0, 100)
    await shown.chunks("b", 0, 20)
    await shown.chunks("a", 64, 100)
    await shown.chunks("a", 100, 100)
    await shown.chunks("b", 20, 20)
    shown.documents(2)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("documents chunked: 0/2")
    assert err[1].startswith("documents chunked: 2/2")
    lines = [line for line in err if line.startswith("chunks embedded")]
    counts = [line.split(": ")[1].split(" ")[0] for line in lines]
    assert counts == ["0/120", "0/120", "0/120", "64/120", "100/120", "120/120"]
    assert "chunks embedded: 64/120 (53%)" in lines[3]
    assert err[-1].startswith("documents stored: 2/2")


def test_a_log_is_never_quiet_for_long_while_its_work_does_not_move(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A batch being chunked, a model loading: the unfinished task is printed again every
    few seconds (here every 0.1 s), though nothing moved."""
    import time

    with _LogProgress("files", every_s=0.1, early_every_s=0.1) as bar:
        task = bar.add_task("reading", total=3)
        bar.update(task, completed=0)
        time.sleep(0.6)
        bar.update(task, completed=3)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("reading: 0/3 files (0%), 0 s")
    assert len([line for line in lines if line.startswith("reading: 0/3")]) >= 3
    assert lines[-1].startswith("reading: 3/3 files (100%)")


def test_a_log_prints_often_in_its_first_minute_then_every_every_s() -> None:
    import time

    bar = _LogProgress("", every_s=10.0, early_every_s=2.0, early_s=60.0)
    task = bar.add_task("chunks", total=10)
    [state] = bar._tasks

    def due(started_s_ago: float, printed_s_ago: float) -> bool:
        now = time.monotonic()
        state.started, state.printed_at = now - started_s_ago, now - printed_s_ago
        return bar._due(state)

    assert bar._tasks[task] is state
    assert not due(30, 1) and due(30, 3)  # first minute: every 2 s
    assert not due(300, 3) and due(300, 11)  # later: every 10 s
