"""The stream a turn writes: its events, as the run puts them and as routes read them.

A turn's run (:class:`~convrag.api.turns.TurnRunner`) writes typed events to a queue
through :class:`TurnEvents`, which turns the graph's custom stream into them: ``sources``
always before any ``token``, a ``citation`` as a resolvable marker appears, and
``repetition`` or ``reset`` to discard the tokens so far. ``None`` ends the queue. The
routes read it with :func:`drain`, which keeps an idle stream open with keep-alives.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from convrag.citations import markers
from convrag.records import SourceOut

Event = tuple[str, dict[str, Any]]

#: Streamed replies must reach the client token by token: no caching, no proxy buffering.
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

#: What :func:`drain` yields after ``keepalive_s`` without an event (compare with ``is``).
KEEPALIVE: Event = ("keep-alive", {})

#: An SSE comment: clients skip it, proxies see bytes and keep an idle stream open.
KEEPALIVE_COMMENT = ": keep-alive\n\n"


class TurnEvents:
    """The events of one turn's run, written to its ``queue`` as they happen.

    Keeps what the order of events depends on: whether ``sources`` went out (a turn that
    finds none still sends an empty one before its first token), the text streamed since
    the last discarded draft and the markers of it already cited (each ``citation`` goes
    out once, when its marker first appears and names a source)."""

    def __init__(self, queue: asyncio.Queue[Event | None]) -> None:
        self.queue = queue
        self.sources: list[SourceOut] = []
        """The turn's sources, once its ``sources`` event went out."""
        self._text = ""
        self._cited: set[str] = set()
        self._sent_sources = False

    def put(self, name: str, data: dict[str, Any]) -> None:
        """Write event ``name`` with ``data``."""
        self.queue.put_nowait((name, data))

    def end(self) -> None:
        """End the stream: :func:`drain` returns after the events written so far."""
        self.queue.put_nowait(None)

    def custom(self, part: dict[str, Any]) -> None:
        """Write the events of one part of the graph's custom stream (its ``event`` names
        the kind; the rest is the data)."""
        event = part.get("event")
        data = {k: v for k, v in part.items() if k != "event"}
        if event == "sources":
            self.sources = data["sources"]
            self._sent_sources = True
            self.put("sources", data)
        elif event == "token":
            self._token(data)
        elif event in ("repetition", "reset"):
            self._text, self._cited = "", set()
            self.put(event, data)
        elif event is not None:
            self.put(event, data)

    def _token(self, data: dict[str, Any]) -> None:
        """A token, after the sources, then the citations its marker completes."""
        if not self._sent_sources:
            self.put("sources", {"sources": []})
            self._sent_sources = True
        self._text += data["text"]
        self.put("token", data)
        for m in markers(self._text):
            n = int(m.group(1))
            if m.group(0) not in self._cited and 1 <= n <= len(self.sources):
                self._cited.add(m.group(0))
                self.put("citation", {"marker": m.group(0), "source": self.sources[n - 1]})


async def drain(
    queue: asyncio.Queue[Event | None], *, keepalive_s: float | None = None
) -> AsyncIterator[Event]:
    """Events until the turn ends; with ``keepalive_s``, also :data:`KEEPALIVE` each time
    that many seconds pass without one.

    A stalled LLM can leave a stream silent for a minute, and proxies with a 60 s idle
    timeout then cut it; streaming routes answer :data:`KEEPALIVE` with
    :data:`KEEPALIVE_COMMENT`. The pending ``queue.get()`` is waited on, not cancelled,
    between keep-alives, so no event is lost.
    """
    while True:
        if keepalive_s is None:
            item = await queue.get()
        else:
            getter = asyncio.ensure_future(queue.get())
            try:
                while not (await asyncio.wait({getter}, timeout=keepalive_s))[0]:
                    yield KEEPALIVE
            finally:
                getter.cancel()  # the client went away while waiting: stop waiting too
            item = getter.result()
        if item is None:
            return
        yield item
