"""The conversation-memory writer: bounded under steady load and at shutdown."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Sequence
from typing import cast

import numpy as np
import pytest
from pymilvus import MilvusException

from convrag.embeddings import Embedder, Matrix
from convrag.services import Services
from convrag.stores.memory import MemoryItem, MemoryWriter
from convrag.stores.vectors import KIND_MEMORY, VectorIndex, VectorRow


def _item(workspace: str, n: int) -> MemoryItem:
    return MemoryItem(workspace, str(uuid.uuid4()), str(uuid.uuid4()), f"Question {n}? Answer {n}.")


async def test_a_steady_stream_of_turns_is_written_before_it_stops(
    services: Services, workspace: str
) -> None:
    writer = MemoryWriter(services.index, services.embedder, quiet_s=0.3, max_delay_s=0.5)
    written_while_busy = 0
    for n in range(40):  # a turn every 0.05 s: never quiet for 0.3 s
        writer.add(_item(workspace, n))
        await asyncio.sleep(0.05)
        written_while_busy = max(written_while_busy, n + 1 - writer.pending)
    assert written_while_busy > 0
    assert writer.pending < 40
    await writer.flush()
    assert writer.pending == 0 and writer.dropped == 0
    assert await asyncio.to_thread(services.index.count, workspace, KIND_MEMORY) == 40


async def test_shutdown_flush_is_bounded_and_counts_what_it_drops(
    services: Services, workspace: str
) -> None:
    writer = MemoryWriter(services.index, services.embedder, quiet_s=60, max_delay_s=60)
    for n in range(5):
        writer.add(_item(workspace, n))
    await writer.flush(deadline_s=0.0)
    assert writer.pending == 0 and writer.dropped == 5


async def test_the_queue_drops_its_oldest_turn_past_its_limit(
    services: Services, workspace: str
) -> None:
    writer = MemoryWriter(
        services.index, services.embedder, quiet_s=60, max_delay_s=60, max_queue=3
    )
    for n in range(5):
        writer.add(_item(workspace, n))
    assert writer.pending == 3 and writer.dropped == 2
    await writer.flush()
    assert await asyncio.to_thread(services.index.count, workspace, KIND_MEMORY) == 3


class _Embedder:
    name = "fake"
    dim = 4

    def embed(self, texts: Sequence[str]) -> Matrix:
        return np.ones((len(texts), self.dim), dtype=np.float32)


class _FlakyIndex:
    """A vector index whose first ``failures`` upserts fail as a restarting Milvus Lite's do."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.written: list[str] = []

    def upsert(self, workspace_id: str, rows: list[VectorRow]) -> None:
        if self.failures:
            self.failures -= 1
            raise MilvusException(message="failed to connect to 127.0.0.1:19530")
        self.written += [row.chunk_id for row in rows]


def _writer(
    index: _FlakyIndex, *, quiet_s: float, max_delay_s: float, attempts: int = 3
) -> MemoryWriter:
    return MemoryWriter(
        cast(VectorIndex, index),
        cast(Embedder, _Embedder()),
        quiet_s=quiet_s,
        max_delay_s=max_delay_s,
        attempts=attempts,
    )


async def test_a_failed_write_is_retried_and_the_writer_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    index = _FlakyIndex(failures=1)
    writer = _writer(index, quiet_s=0.01, max_delay_s=0.05)
    item = _item("ws", 0)
    with caplog.at_level(logging.WARNING, "convrag.stores.memory"):
        writer.add(item)
        for _ in range(600):  # until the retry has written it
            await asyncio.sleep(0.05)
            if index.written:
                break
    assert index.written == [item.turn_id]
    assert writer.pending == 0 and writer.dropped == 0
    assert "retrying" in caplog.text
    writer.add(_item("ws", 1))  # the same worker is still there to write the next
    await writer.flush()
    assert len(index.written) == 2


async def test_a_batch_that_keeps_failing_is_dropped_and_logged_then_the_next_is_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    index = _FlakyIndex(failures=2)
    writer = _writer(index, quiet_s=0.01, max_delay_s=0.01, attempts=2)
    with caplog.at_level(logging.WARNING, "convrag.stores.memory"):
        writer.add(_item("ws", 0))
        for _ in range(600):
            await asyncio.sleep(0.05)
            if writer.dropped:
                break
        writer.add(_item("ws", 1))
        await writer.flush()
    assert writer.dropped == 1 and len(index.written) == 1
    assert "1 turns not written to conversation memory" in caplog.text
    assert "MilvusException" in caplog.text


async def test_shutdown_flush_never_raises_when_the_store_fails_and_says_what_it_lost(
    caplog: pytest.LogCaptureFixture,
) -> None:
    index = _FlakyIndex(failures=10)
    writer = _writer(index, quiet_s=60, max_delay_s=60)
    for n in range(3):
        writer.add(_item("ws", n))
    with caplog.at_level(logging.WARNING, "convrag.stores.memory"):
        await writer.flush()
    assert writer.pending == 0 and writer.dropped == 3
    assert "3 turns not written to conversation memory (shutdown" in caplog.text


async def test_a_dead_writer_is_logged_once_and_flush_still_writes_its_queue(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The operator's trial: the writer task died of a MilvusException and the shutdown's
    flush re-raised it (``Application shutdown failed``), dropping the queue unsaid."""
    index = _FlakyIndex(failures=0)
    writer = _writer(index, quiet_s=60, max_delay_s=60)

    async def dies() -> None:
        raise MilvusException(message="failed to connect to 127.0.0.1:19530")

    monkeypatch.setattr(writer, "_run", dies)
    with caplog.at_level(logging.WARNING, "convrag.stores.memory"):
        writer.add(_item("ws", 0))
        await asyncio.sleep(0)  # the worker runs, and dies
        await asyncio.sleep(0)
        await writer.flush()
    stopped = [r for r in caplog.records if "memory writer stopped" in r.getMessage()]
    assert len(stopped) == 1 and "1 queued turns" in stopped[0].getMessage()
    assert len(index.written) == 1 and writer.pending == 0


class _HeldIndex:
    """A vector index whose upserts wait until the test releases them."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.written: list[str] = []

    def upsert(self, workspace_id: str, rows: list[VectorRow]) -> None:
        self.entered.set()
        self.release.wait(30)
        self.written += [row.chunk_id for row in rows]


async def test_discarding_a_conversation_drops_its_queued_turns_after_a_write_under_way() -> None:
    """A deleted conversation's turns must not be written after its vectors are deleted:
    the queued ones are dropped, and the discard returns only once a write already under
    way (which the delete then clears) has ended."""
    index = _HeldIndex()
    writer = MemoryWriter(
        cast(VectorIndex, index), cast(Embedder, _Embedder()), quiet_s=0.01, max_delay_s=0.01
    )
    first = _item("ws", 0)
    writer.add(first)
    assert await asyncio.to_thread(index.entered.wait, 30)  # its write is under way
    queued = MemoryItem("ws", first.conversation_id, str(uuid.uuid4()), "Q: More? A: Yes.")
    other = _item("ws", 1)
    writer.add(queued)
    writer.add(other)
    discarding = asyncio.create_task(writer.discard("ws", first.conversation_id))
    await asyncio.sleep(0.05)
    assert not discarding.done()  # the write under way still holds its turn
    index.release.set()
    await discarding
    await writer.flush()
    assert index.written == [first.turn_id, other.turn_id]
    assert writer.pending == 0 and writer.dropped == 0
