"""Conversation memory: each answered turn, embedded into the vector index off the hot path.

Turns are queued and written by one worker task after a quiet period, in batches. The
embedding model is shared with query embedding (one ONNX session), so embedding a turn
right away would make the *next* question wait for it; a person rarely asks again within
the quiet period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from convrag.embeddings import Embedder
from convrag.stores.vectors import KIND_MEMORY, VectorIndex, VectorRow

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class MemoryItem:
    workspace_id: str
    conversation_id: str
    turn_id: str
    text: str


class MemoryWriter:
    """Queue of turns to embed as ``kind=memory`` rows; :meth:`flush` writes the rest now.

    Turns are written in batches (one embedding call, one upsert) once no turn arrived
    for ``quiet_s``, and at the latest ``max_delay_s`` after the oldest queued one, so a
    steady stream of turns cannot grow the queue without end. The queue holds at most
    ``max_queue`` turns: memory rows are derived from stored turns, so under overload the
    oldest are dropped (and logged) rather than holding memory.
    """

    def __init__(
        self,
        index: VectorIndex,
        embedder: Embedder,
        *,
        quiet_s: float = 2.0,
        max_delay_s: float = 10.0,
        batch: int = 32,
        max_queue: int = 2000,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.quiet_s = quiet_s
        self.max_delay_s = max_delay_s
        self.batch = batch
        self.max_queue = max_queue
        self.dropped = 0
        self._queue: list[tuple[MemoryItem, float]] = []
        self._worker: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @classmethod
    @asynccontextmanager
    async def open(cls, index: VectorIndex, embedder: Embedder) -> AsyncIterator[MemoryWriter]:
        """A writer whose queue is flushed (within a bounded time) when the block ends."""
        writer = cls(index, embedder)
        try:
            yield writer
        finally:
            await writer.flush()

    @property
    def pending(self) -> int:
        return len(self._queue)

    def add(self, item: MemoryItem) -> None:
        loop = asyncio.get_running_loop()
        self._queue.append((item, loop.time()))
        if len(self._queue) > self.max_queue:
            del self._queue[0]
            self.dropped += 1
            log.warning("conversation memory queue full: dropped the oldest turn")
        self._wake.set()
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            # Wait for a quiet period, but no longer than max_delay_s after the oldest.
            self._wake.clear()
            overdue = loop.time() - self._queue[0][1]
            wait = min(self.quiet_s, self.max_delay_s - overdue)
            if wait > 0:
                try:
                    await asyncio.wait_for(self._wake.wait(), wait)
                    continue
                except TimeoutError:
                    pass
            await self._write_batch()

    async def _write_batch(self) -> None:
        taken = self._queue[: self.batch]  # removed once written: a cancelled write is redone
        items = [item for item, _ in taken]
        vectors = await asyncio.to_thread(self.embedder.embed, [i.text for i in items])
        by_workspace: dict[str, list[VectorRow]] = {}
        for item, vector in zip(items, vectors, strict=True):
            by_workspace.setdefault(item.workspace_id, []).append(
                VectorRow(
                    chunk_id=item.turn_id,
                    document_id=item.conversation_id,
                    text=item.text,
                    vector=vector.tolist(),
                    kind=KIND_MEMORY,
                    conversation_id=item.conversation_id,
                )
            )
        for workspace_id, rows in by_workspace.items():
            await asyncio.to_thread(self.index.upsert, workspace_id, rows)
        if self._queue[: len(taken)] == taken:
            del self._queue[: len(taken)]

    async def flush(self, deadline_s: float = 5.0) -> None:
        """Write what is queued now, for at most ``deadline_s`` (shutdown must end); what
        is left is dropped and logged: memory rows are derived from stored turns."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        loop = asyncio.get_running_loop()
        stop_at = loop.time() + deadline_s
        while self._queue and loop.time() < stop_at:
            await self._write_batch()
        if self._queue:
            self.dropped += len(self._queue)
            log.warning("shutdown: %d turns not written to conversation memory", len(self._queue))
            self._queue.clear()
