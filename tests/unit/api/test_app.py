"""What the service tells its operator: the startup summary and the log format."""

from __future__ import annotations

import pytest

from convrag.api.app import (
    SUPERVISED_STORES_ENV,
    SUPERVISOR_ENV,
    supervised_stores,
)
from convrag.server import log_config


def test_only_a_serve_worker_reads_which_stores_its_serve_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SUPERVISOR_ENV, raising=False)
    monkeypatch.setenv(SUPERVISED_STORES_ENV, "postgres,milvus")
    assert supervised_stores() == frozenset()
    monkeypatch.setenv(SUPERVISOR_ENV, "1")
    monkeypatch.setenv(SUPERVISED_STORES_ENV, "postgres")
    assert supervised_stores() == {"postgres"}


def test_the_service_logs_convrag_lines_at_info_with_time_level_and_name() -> None:
    config = log_config()
    assert config["loggers"]["convrag"] == {
        "handlers": ["convrag"],
        "level": "INFO",
        "propagate": False,
    }
    fmt = config["formatters"]["convrag"]["fmt"]
    assert "%(asctime)s" in fmt and "%(name)s" in fmt and "%(levelprefix)s" in fmt
    assert "%(asctime)s" in config["formatters"]["access"]["fmt"]
