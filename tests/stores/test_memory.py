"""The conversation-memory writer: bounded under steady load and at shutdown."""

from __future__ import annotations

import asyncio
import uuid

from convrag.services import Services
from convrag.stores.memory import MemoryItem, MemoryWriter
from convrag.stores.vectors import KIND_MEMORY


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
