"""Conversation memory: each answered turn, embedded into the vector index off the hot path.

Turns are queued and written by one worker task after a quiet period, one at a time. The
embedding model is shared with query embedding (one ONNX session), so embedding a turn
right away would make the *next* question wait for it; a person rarely asks again within
the quiet period.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from convrag.embeddings import Embedder
from convrag.stores.vectors import KIND_MEMORY, VectorIndex, VectorRow


@dataclass(frozen=True, slots=True)
class MemoryItem:
    workspace_id: str
    conversation_id: str
    turn_id: str
    text: str


class MemoryWriter:
    """Queue of turns to embed as ``kind=memory`` rows; :meth:`flush` writes the rest now."""

    def __init__(self, index: VectorIndex, embedder: Embedder, *, quiet_s: float = 2.0) -> None:
        self.index = index
        self.embedder = embedder
        self.quiet_s = quiet_s
        self._queue: list[MemoryItem] = []
        self._worker: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @classmethod
    @asynccontextmanager
    async def open(cls, index: VectorIndex, embedder: Embedder) -> AsyncIterator[MemoryWriter]:
        """A writer whose queue is flushed when the block ends."""
        writer = cls(index, embedder)
        try:
            yield writer
        finally:
            await writer.flush()

    def add(self, item: MemoryItem) -> None:
        self._queue.append(item)
        self._wake.set()
        if self._worker is None or self._worker.done():
            self._worker = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while self._queue:
            # Wait until no new turn arrived for quiet_s.
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self.quiet_s)
                continue
            except TimeoutError:
                pass
            await self._write_one()

    async def _write_one(self) -> None:
        item = self._queue[0]  # popped once written: a cancelled write is redone by flush
        vector = (await asyncio.to_thread(self.embedder.embed, [item.text]))[0]
        row = VectorRow(
            chunk_id=item.turn_id,
            document_id=item.conversation_id,
            text=item.text,
            vector=vector.tolist(),
            kind=KIND_MEMORY,
            conversation_id=item.conversation_id,
        )
        await asyncio.to_thread(self.index.upsert, item.workspace_id, [row])
        if self._queue and self._queue[0] is item:
            self._queue.pop(0)

    async def flush(self) -> None:
        """Write everything queued now (shutdown, tests)."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        while self._queue:
            await self._write_one()
