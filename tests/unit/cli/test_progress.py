"""The CLI's progress: an ingest's chunks move, with their rate and an estimate."""

from __future__ import annotations

import pytest

from convrag.cli.progress import IngestProgress, _LogProgress, _pace


def test_pace_gives_the_rate_so_far_and_the_rests_time_at_it() -> None:
    assert _pace(100, 300, 50) == ", 2/s, about 100 s left"
    assert _pace(300, 300, 50) == ", 6/s"  # done: nothing left to estimate
    assert _pace(0, 300, 50) == ""  # nothing done yet: no rate


async def test_an_ingest_shows_its_chunks_embedded_over_every_document_counted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bar = _LogProgress("", every_s=0.0)
    shown = IngestProgress(bar, documents=2)
    await shown.chunks("a", 0, 100)
    await shown.chunks("a", 64, 100)
    await shown.chunks("b", 0, 20)
    await shown.chunks("a", 100, 100)
    await shown.chunks("b", 20, 20)
    shown.documents(2)
    lines = [line for line in capsys.readouterr().err.splitlines() if "chunks" in line]
    counts = [line.split(": ")[1].split(" ")[0] for line in lines]
    assert counts == ["0/100", "64/100", "64/120", "100/120", "120/120"]
    assert "chunks embedded: 64/100 (64%)" in lines[1]
