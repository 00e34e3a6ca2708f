"""Embedders: the bundled ONNX model, and OpenAI-compatible embeddings over HTTP."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np
import pytest
from pydantic import SecretStr

from convrag.config import Settings
from convrag.embeddings import OpenAIEmbedder
from convrag.stores.embedded import pid_alive
from convrag.testing.openai_stub import OpenAIStub


def test_openai_embeddings_go_through_the_openai_api_shape() -> None:
    with OpenAIStub.in_thread(embedding_dim=64) as stub:
        settings = Settings(openai_base_url=stub.base_url, openai_api_key=SecretStr("k"))
        embedder = OpenAIEmbedder("text-embedding-3-small", settings)
        rows = embedder.embed(["basic salary", "annual leave"])
    assert embedder.dim == 64 and rows.shape == (2, 64)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert stub.embedding_requests[-1]["model"] == "text-embedding-3-small"


async def test_bulk_embedding_in_a_child_process_matches_the_query_embedder() -> None:
    from convrag.config import Settings
    from convrag.embeddings import LOCAL_MODEL, ProcessEmbedder, get_embedder

    texts = ["Every employee gets 25 days of annual leave.", "The meal allowance is 60 euros."]
    local = get_embedder(Settings()).embed(texts)
    async with ProcessEmbedder.open(LOCAL_MODEL, 64, threads=2, niceness=7) as bulk:
        child = await bulk.embed(texts)
        # chat's threads go first (19 is the lowest priority there is), but the child has
        # a share of a busy core: not the idle policy, which any other load starved
        assert await bulk.run(os.nice, 0) == min(19, os.nice(0) + 7)
        assert await bulk.run(os.sched_getscheduler, 0) == os.SCHED_OTHER
    assert child.shape == local.shape
    assert float(abs(child - local).max()) < 1e-5


async def test_an_uploaded_file_is_read_in_a_child_process_and_its_errors_come_back(
    tmp_path: Path,
) -> None:
    from convrag.documents.base import IngestError
    from convrag.documents.load import load_path
    from convrag.embeddings import LOCAL_MODEL, ProcessEmbedder

    good, bad = tmp_path / "leave.txt", tmp_path / "bad.jsonl"
    good.write_text("Every employee gets 25 days of annual leave.")
    bad.write_text('{"text": "no id"}\n')
    async with ProcessEmbedder.open(LOCAL_MODEL, 64) as bulk:
        assert await bulk.read(os.getpid) not in (os.getpid(), await bulk.run(os.getpid))
        [doc] = await bulk.read(load_path, good, max_bytes=1000)
        assert doc.text == "Every employee gets 25 days of annual leave."
        with pytest.raises(IngestError, match=r"bad\.jsonl:1: each line needs"):
            await bulk.read(load_path, bad, max_bytes=1000)


class _Stop(Exception):
    """Ends a block early, so that its children stop at once."""


async def test_a_read_comes_back_while_the_ingest_child_is_in_the_middle_of_a_call(
    tmp_path: Path,
) -> None:
    """An upload's file is read before its 202: that read must not wait for the ingest
    child to finish another upload's batch (a large file's chunking or embedding)."""
    from convrag.embeddings import LOCAL_MODEL, ProcessEmbedder

    started, finished = tmp_path / "started", tmp_path / "finished"
    with pytest.raises(_Stop):
        async with ProcessEmbedder.open(LOCAL_MODEL, 64) as bulk:
            call = asyncio.ensure_future(
                bulk.run(_a_call_in_hand, str(started), 60.0, str(finished))
            )
            await _in_hand(started)
            assert await bulk.read(os.getpid) != os.getpid()
            assert not finished.exists()  # the ingest call is still in hand
            raise _Stop
    await asyncio.gather(call, return_exceptions=True)


async def test_a_dead_ingest_child_is_a_clear_error_and_the_next_call_starts_a_new_one() -> None:
    from convrag.embeddings import LOCAL_MODEL, ChildDied, ProcessEmbedder

    async with ProcessEmbedder.open(LOCAL_MODEL, 64) as bulk:
        first = await bulk.run(os.getpid)
        with pytest.raises(ChildDied, match="killed, or out of memory"):
            await bulk.run(os._exit, 1)
        second = await bulk.run(os.getpid)
        assert second not in (first, os.getpid())


async def test_the_ingest_child_outlives_a_ctrl_c_its_parent_decides_when_it_stops() -> None:
    """A terminal's Ctrl-C reaches the whole process group, the ingest child included: the
    child goes on (the parent's shutdown lets it finish the batch in hand) instead of
    sending a KeyboardInterrupt back as the batch's result."""
    import signal

    from convrag.embeddings import LOCAL_MODEL, ProcessEmbedder

    async with ProcessEmbedder.open(LOCAL_MODEL, 64) as bulk:
        child = await bulk.run(os.getpid)
        os.kill(child, signal.SIGINT)
        await asyncio.sleep(0.5)
        assert await bulk.run(os.getpid) == child
        assert (await bulk.embed(["Every employee gets 25 days of annual leave."])).shape[0] == 1


def _a_call_in_hand(started: str, seconds: float, finished: str) -> None:
    """A call in the ingest child: it writes ``started`` at once and ``finished`` once it
    has run for ``seconds``."""
    import time

    Path(started).touch()
    time.sleep(seconds)
    Path(finished).touch()


async def _in_hand(started: Path) -> None:
    """Until the child has begun the call (at most a minute)."""
    for _ in range(600):
        if started.exists():
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the ingest child never began the call")


async def test_a_block_that_ends_on_an_error_stops_the_ingest_child_in_the_middle_of_its_call(
    tmp_path: Path,
) -> None:
    """Ctrl-C in ``convrag ingest``: its one call may embed a whole large file (minutes),
    and the child, which ignores the terminal's Ctrl-C, must not be waited for. A block
    that ends as it should lets the call in hand finish (a server's shutdown)."""
    from convrag.embeddings import LOCAL_MODEL, ProcessEmbedder

    started, cut, finished = tmp_path / "started", tmp_path / "cut", tmp_path / "finished"
    with pytest.raises(KeyboardInterrupt):
        async with ProcessEmbedder.open(LOCAL_MODEL, 64) as bulk:
            child = await bulk.run(os.getpid)
            call = asyncio.ensure_future(bulk.run(_a_call_in_hand, str(started), 3.0, str(cut)))
            await _in_hand(started)
            raise KeyboardInterrupt
    await asyncio.gather(call, return_exceptions=True)
    assert not pid_alive(child) and not cut.exists()
    started.unlink()
    async with ProcessEmbedder.open(LOCAL_MODEL, 64) as bulk:
        call = asyncio.ensure_future(bulk.run(_a_call_in_hand, str(started), 0.5, str(finished)))
        await _in_hand(started)
    assert finished.exists() and await call is None
