"""The record a running ``convrag serve`` keeps in its data directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

from convrag.service_record import (
    RECORD_NAME,
    ServiceRecord,
    live_record,
    write_record,
)


def test_a_record_whose_process_is_gone_is_ignored_and_removed(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    write_record(tmp_path, ServiceRecord(gone.pid, "http://127.0.0.1:1", "t", "s"))
    assert live_record(tmp_path) is None and not (tmp_path / RECORD_NAME).exists()


def test_a_record_of_a_process_that_is_not_convrag_is_ignored(tmp_path: Path) -> None:
    with subprocess.Popen(["sleep", "30"]) as other:
        try:
            write_record(tmp_path, ServiceRecord(other.pid, "http://127.0.0.1:1", "t", "s"))
            assert live_record(tmp_path) is None
        finally:
            other.kill()
