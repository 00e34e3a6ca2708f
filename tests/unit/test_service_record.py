"""The record a running ``convrag serve`` keeps in its data directory."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from convrag.config import Settings
from convrag.service_record import (
    RECORD_NAME,
    ServiceRecord,
    fingerprint,
    local_host,
    read_record,
    recorded,
    remove_record,
    write_record,
)


def test_a_record_is_readable_by_its_owner_alone_and_removed_after(tmp_path: Path) -> None:
    record = ServiceRecord.new("0.0.0.0", 8123, Settings(data_dir=tmp_path))
    with recorded(tmp_path, record):
        assert stat.S_IMODE((tmp_path / RECORD_NAME).stat().st_mode) == 0o600
        assert read_record(tmp_path) == record and record.url == "http://127.0.0.1:8123"
        assert record.pid == os.getpid() and len(record.token) >= 40
    assert not (tmp_path / RECORD_NAME).exists()


def test_a_service_removes_only_its_own_record(tmp_path: Path) -> None:
    write_record(tmp_path, ServiceRecord(os.getpid(), "http://127.0.0.1:1", "t", "s"))
    remove_record(tmp_path, os.getpid() + 1)
    assert read_record(tmp_path) is not None
    (tmp_path / RECORD_NAME).write_text("{not json")
    assert read_record(tmp_path) is None


def test_the_fingerprint_tells_settings_apart_secrets_included(tmp_path: Path) -> None:
    one = Settings(data_dir=tmp_path, openai_api_key="sk-one")
    assert fingerprint(one) == fingerprint(Settings(data_dir=tmp_path, openai_api_key="sk-one"))
    assert fingerprint(one) != fingerprint(Settings(data_dir=tmp_path, openai_api_key="sk-two"))
    assert "sk-one" not in fingerprint(one)


def test_a_wildcard_bind_is_reached_on_loopback() -> None:
    assert [local_host(h) for h in ("0.0.0.0", "::", "::1", "10.0.0.5")] == [
        "127.0.0.1",
        "[::1]",
        "[::1]",
        "10.0.0.5",
    ]
