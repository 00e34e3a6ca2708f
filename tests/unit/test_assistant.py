"""The reasons a failed turn is stored with and told to clients."""

from __future__ import annotations

import errno

import psycopg
import pytest
from psycopg.errors import DiskFull

from convrag.assistant import OUT_OF_DISK, failure_reason


def _caused_by(cause: BaseException) -> RuntimeError:
    try:
        raise RuntimeError("the checkpoint write failed") from cause
    except RuntimeError as exc:
        return exc


@pytest.mark.parametrize(
    "exc",
    [
        DiskFull('could not extend file "base/5/16384": No space left on device'),
        OSError(errno.ENOSPC, "No space left on device"),
        _caused_by(DiskFull("could not write to file")),
    ],
    ids=["postgres-disk-full", "oserror-enospc", "caused-by-disk-full"],
)
def test_a_full_disk_is_named_as_such_not_as_an_outage(exc: BaseException) -> None:
    assert failure_reason(exc) == OUT_OF_DISK == "the database is out of disk space"


def test_a_lost_connection_and_another_oserror_keep_their_reasons() -> None:
    lost = psycopg.OperationalError("server closed the connection unexpectedly")
    assert failure_reason(lost) == "the database was unavailable"
    assert failure_reason(OSError(errno.EACCES, "Permission denied")).startswith("PermissionError")
