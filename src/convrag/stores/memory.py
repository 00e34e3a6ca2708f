"""Conversation memory: each answered turn, embedded into the vector index off the hot path.

Turns are queued and written by one worker task after a quiet period, in batches. The
embedding model is shared with query embedding (one ONNX session), so embedding a turn
right away would make the *next* question wait for it; a person rarely asks again within
the quiet period.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from convrag.embeddings import Embedder
from convrag.stores.vectors import KIND_MEMORY, VectorIndex, VectorRow

log = logging.getLogger(__name__)


Departing = Callable[[Sequence[str]], Awaitable[set[str]]]
"""Which of the given conversation ids are gone or being deleted (in any process)."""


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

    A failed write (the vector index restarting, say) is logged and retried after
    ``max_delay_s``; a batch that fails ``attempts`` times in a row is dropped and logged,
    and the writer goes on with the rest. Nothing here raises into a turn or a shutdown.

    A conversation's delete drops its queued turns (:meth:`discard`), but only in the
    process that deletes it; with several processes on one database, another one may
    still hold a turn of it. With ``departing`` (which of the given conversation ids are
    gone or being deleted, in any process), each batch's vectors of such conversations
    are deleted again right after they are written: the delete marks the conversation
    before it clears its vectors, so a write either came before that clearing or sees
    the mark.
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
        attempts: int = 3,
        departing: Departing | None = None,
    ) -> None:
        self.index = index
        self.embedder = embedder
        self.departing = departing
        self.quiet_s = quiet_s
        self.max_delay_s = max_delay_s
        self.batch = batch
        self.max_queue = max_queue
        self.attempts = attempts
        self.dropped = 0
        self._queue: list[tuple[MemoryItem, float]] = []
        self._worker: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._writing = asyncio.Lock()
        """Held while a batch is embedded and written (:meth:`discard` waits for it)."""

    @classmethod
    @asynccontextmanager
    async def open(
        cls, index: VectorIndex, embedder: Embedder, *, departing: Departing | None = None
    ) -> AsyncIterator[MemoryWriter]:
        """A writer whose queue is flushed (within a bounded time) when the block ends."""
        writer = cls(index, embedder, departing=departing)
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
            self._worker.add_done_callback(self._stopped)

    async def discard(self, workspace_id: str, conversation_id: str) -> None:
        """Forget the queued turns of a conversation that is being deleted, and wait for
        a write under way (which may hold one of them): called before the delete clears
        the conversation's vectors, so that none of its turns is written after it."""
        self._queue = [
            entry
            for entry in self._queue
            if (entry[0].workspace_id, entry[0].conversation_id) != (workspace_id, conversation_id)
        ]
        async with self._writing:
            pass

    def _stopped(self, worker: asyncio.Task[None]) -> None:
        """Log a worker that died of an error, once (reading its exception also keeps
        asyncio from reporting it again when the task is collected); its queue stays for
        the next worker or the shutdown's flush."""
        if worker.cancelled() or worker.exception() is None:
            return
        log.warning(
            "the conversation memory writer stopped (%s); %d queued turns wait for the next write",
            _reason(worker.exception()),
            len(self._queue),
            exc_info=worker.exception(),
        )

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
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
            taken = self._queue[: self.batch]
            try:
                await self._write_batch(taken)
            except Exception as exc:
                failures += 1
                if failures < self.attempts:
                    log.warning(
                        "writing %d turns to conversation memory failed (%s); retrying in %g s",
                        len(taken),
                        _reason(exc),
                        self.max_delay_s,
                    )
                    await asyncio.sleep(self.max_delay_s)
                    continue
                self._drop(taken, f"{failures} writes failed, the last with {_reason(exc)}")
            failures = 0

    def _drop(self, taken: list[tuple[MemoryItem, float]], why: str) -> None:
        """Forget ``taken`` (those still queued), counted and logged with ``why``."""
        gone = {id(entry) for entry in taken}
        left = [entry for entry in self._queue if id(entry) not in gone]
        lost = len(self._queue) - len(left)
        self._queue = left
        if lost:
            self.dropped += lost
            log.warning("%d turns not written to conversation memory (%s)", lost, why)

    async def _write_batch(self, taken: list[tuple[MemoryItem, float]]) -> None:
        """Embed and upsert ``taken`` (deleting again what it wrote for a departing
        conversation), then unqueue it (a cancelled write is redone)."""
        async with self._writing:
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
            if self.departing is not None:
                gone = await self.departing([i.conversation_id for i in items])
                for workspace_id, conversation_id in sorted(
                    {
                        (i.workspace_id, i.conversation_id)
                        for i in items
                        if i.conversation_id in gone
                    }
                ):
                    await asyncio.to_thread(
                        self.index.delete_conversation, workspace_id, conversation_id
                    )
            if self._queue[: len(taken)] == taken:
                del self._queue[: len(taken)]

    async def flush(self, deadline_s: float = 5.0) -> None:
        """Write what is queued now, for at most ``deadline_s`` (shutdown must end); what
        is left, or what a failed write could not write, is dropped and logged: memory
        rows are derived from stored turns. Never raises (a dead worker was logged when
        it died)."""
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            # gather() hands back the worker's own error instead of raising it here.
            await asyncio.gather(worker, return_exceptions=True)
        loop = asyncio.get_running_loop()
        stop_at = loop.time() + deadline_s
        while self._queue and loop.time() < stop_at:
            try:
                await self._write_batch(self._queue[: self.batch])
            except Exception as exc:
                self._drop(self._queue, f"shutdown, after a write failed with {_reason(exc)}")
        self._drop(self._queue, "shutdown")


def _reason(exc: BaseException | None) -> str:
    """An error in a log line: its type and the start of its message."""
    message = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
