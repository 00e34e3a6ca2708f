"""The embedded servers' restart logging, with the restarts faked."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from convrag.stores.embedded import ManagedMilvusLite
from tests.stores.test_embedded import scratch

__all__ = ["scratch"]


class _Unrevivable(ManagedMilvusLite):
    """A server whose every restart fails, with a long message (pgserver's names its log)."""

    def revive(self) -> bool:
        raise RuntimeError("could not start\n" + "a line of the server's log\n" * 200)


def test_a_restart_that_keeps_failing_logs_its_traceback_once_then_one_line_a_check(
    scratch: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Supervision retries every few seconds while the server cannot start: the first
    failure is logged whole, the later ones in a line each, not the whole log again."""
    server = _Unrevivable(scratch)
    with caplog.at_level(logging.WARNING, logger="convrag.stores.embedded"):
        for _ in range(3):
            server._supervise_once("http://127.0.0.1:1")
    first, *again = caplog.records
    assert first.exc_info is not None and "trying again" in first.getMessage()
    assert [(r.exc_info, r.getMessage()) for r in again] == [
        (None, "restarting _Unrevivable failed again (RuntimeError)")
    ] * 2
