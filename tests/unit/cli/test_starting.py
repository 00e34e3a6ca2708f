"""A command that starts the stores itself: what it says while it waits."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from convrag.cli.starting import Waiting, starting_here
from convrag.config import Settings


def test_a_wait_says_each_step_and_still_when_nothing_was_said_for_a_while(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with Waiting(every_s=0.2) as waiting:
        waiting.say("starting the vector index ...")
        time.sleep(0.5)
        waiting.done()
        waiting.say("said after done: not shown")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "starting the vector index ..."
    assert lines[1].startswith("still starting the vector index (") and len(lines) >= 2
    assert not [line for line in lines if "after done" in line]


def test_a_quiet_wait_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with Waiting(quiet=True, every_s=0.05) as waiting:
        waiting.say("loading the embedding model ...")
        time.sleep(0.2)
    assert capsys.readouterr().err == ""


def test_stores_behind_urls_start_nothing_here_and_say_nothing_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(
        data_dir=tmp_path,
        database_url=SecretStr("postgresql://u:p@127.0.0.1:1/db"),
        milvus_uri="http://127.0.0.1:1",
    )
    with starting_here(settings, vectors=True, first="starting the stores ...") as waiting:
        waiting.done()
    assert capsys.readouterr().err == ""
    assert list(tmp_path.iterdir()) == []
