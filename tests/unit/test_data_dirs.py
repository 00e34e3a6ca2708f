"""Where the data directory is found when CONVRAG_DATA_DIR is unset, and the stores a
user has used."""

from __future__ import annotations

from pathlib import Path

import pytest

from convrag.data_dirs import (
    MAX_REMEMBERED,
    find_data_dir,
    holds_store,
    known_stores,
    remember_store,
    user_data_dir,
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return tmp_path


def _store(path: Path) -> Path:
    (path / "pg").mkdir(parents=True)
    return path


def test_the_nearest_convrag_holding_a_store_is_found_from_below_it(tmp_path: Path) -> None:
    outer = _store(tmp_path / "repo" / ".convrag")
    deep = tmp_path / "repo" / "src" / "pkg"
    deep.mkdir(parents=True)
    (tmp_path / "repo" / "src" / ".convrag").mkdir()  # no store in it: passed over
    assert find_data_dir(deep) == outer
    inner = _store(deep / ".convrag")
    assert find_data_dir(deep) == inner


def test_without_one_it_is_the_per_user_directory(tmp_path: Path) -> None:
    assert user_data_dir() == tmp_path / "data" / "convrag"
    assert find_data_dir(tmp_path) == user_data_dir()
    assert not holds_store(user_data_dir())


def test_the_stores_used_are_remembered_latest_first_while_they_hold_one(tmp_path: Path) -> None:
    first, second = _store(tmp_path / "a"), _store(tmp_path / "b")
    remember_store(first)
    remember_store(second)
    remember_store(tmp_path / "never-made")
    assert known_stores() == [second, first]
    remember_store(first)
    assert known_stores() == [first, second]
    for n in range(MAX_REMEMBERED + 2):
        remember_store(_store(tmp_path / f"s{n}"))
    assert len(known_stores()) == MAX_REMEMBERED


def test_an_unwritable_state_directory_only_loses_the_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", "/sys/convrag-cannot-write")
    remember_store(_store(tmp_path / "a"))
    assert known_stores() == []


def test_a_store_another_user_owns_is_not_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stores named when none is found are this user's own: a directory of another
    user's, used once, is theirs."""
    import os

    mine = _store(tmp_path / "mine")
    remember_store(mine)
    assert known_stores() == [mine]
    monkeypatch.setattr(os, "getuid", lambda: os.stat(mine).st_uid + 1)
    assert known_stores() == []
