"""Ingestion's reports without the stores: failure causes and the ingest pace."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from convrag.documents.base import IngestError
from convrag.stores.documents import IngestPace, ingest_pace


def test_a_failed_ingest_names_the_cause_without_internal_addresses() -> None:
    from pymilvus import MilvusException

    from convrag.ingest import failure_reason

    reason = failure_reason(MilvusException(message="fail connecting to 127.0.0.1:41234"))
    assert "vector index" in reason and "41234" not in reason
    assert failure_reason(IngestError("a.txt: empty file")) == "a.txt: empty file"


def _row(status: str, done: int, total: int, started: int, *, at_s: float) -> dict[str, Any]:
    """A document row whose ingest began at ``T0`` with ``started`` chunks done, and last
    reported ``done`` of ``total`` at ``T0 + at_s``."""
    return {
        "status": status,
        "n_chunks": done,
        "chunks_total": total,
        "progress_started_chunks": started,
        "progress_started_at": T0,
        "progress_at": T0 + timedelta(seconds=at_s),
    }


T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_ingest_pace_counts_a_running_ingests_rate_up_to_now_and_its_estimate_from_it() -> None:
    # 100 chunks in 50 s (resumed from 20): 2 chunks/s, 200 left: 100 s.
    pace = ingest_pace(_row("processing", 120, 320, 20, at_s=40), T0 + timedelta(seconds=50))
    assert pace == IngestPace(2.0, 100.0)
    # Waiting with nothing new: the rate falls and the estimate grows.
    later = ingest_pace(_row("processing", 120, 320, 20, at_s=40), T0 + timedelta(seconds=100))
    assert later == IngestPace(1.0, 200.0)


def test_ingest_pace_of_a_finished_ingest_is_its_whole_rate_and_no_time_left() -> None:
    pace = ingest_pace(_row("ready", 300, 300, 0, at_s=150), T0 + timedelta(days=1))
    assert pace == IngestPace(2.0, 0.0)


@pytest.mark.parametrize(
    "row",
    [
        {"status": "ready", "n_chunks": 5, "chunks_total": 5},  # a CLI ingest: no clock
        _row("failed", 10, 300, 0, at_s=5),
        _row("processing", 0, 300, 0, at_s=0),  # nothing embedded yet
    ],
)
def test_ingest_pace_is_unknown_without_a_clock_an_embedded_chunk_or_for_a_failure(
    row: dict[str, Any],
) -> None:
    assert ingest_pace(row, T0 + timedelta(seconds=10)) == IngestPace()
