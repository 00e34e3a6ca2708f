"""The stream a turn writes: its events, as the run puts them and as routes read them.

A turn's run (:class:`~convrag.api.turns.TurnRunner`) writes typed events to a queue
through :class:`TurnEvents`, which turns the graph's custom stream
(:data:`~convrag.events.GraphEvent`) into them: ``sources`` always before any ``token``,
a ``citation`` as a resolvable marker appears, and ``repetition`` or ``reset`` to
discard the tokens so far; the run ends it with ``done`` or ``error``. ``None`` ends the
queue. The routes read it with :func:`drain`, which keeps an idle stream open with
keep-alives, and write each event with :func:`sse`.

Every event is a typed record whose ``event`` names it, the graph's
(:mod:`convrag.events`) and the HTTP layer's own, here: :class:`CitationEvent`,
:class:`DoneEvent` (built by :func:`~convrag.api.turn_replies.done_data`) and
:class:`ErrorEvent` (built by :func:`error_event`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any, Literal

from pydantic import BaseModel
from typing_extensions import TypedDict

from convrag.api.schemas import CitationOut
from convrag.citations import markers
from convrag.events import GraphEvent, SourcesEvent, TokenEvent
from convrag.records import Assurance, SourceOut


class CitationEvent(TypedDict):
    """A marker of the streamed answer that names one of its sources, once, as it first
    appears."""

    event: Literal["citation"]
    marker: str
    source: SourceOut


class DoneEvent(TypedDict):
    """The turn is answered: the answer as stored, its resolved citations and flags."""

    event: Literal["done"]
    turn_id: str | None
    answer: str
    citations: list[CitationOut]
    timings_ms: dict[str, float]
    repetition_detected: bool
    no_answer: bool
    confidence: Assurance
    flags: dict[str, Any]
    """The turn's flags (``no_answer``, ``repetition_unresolved``, ...), an open set."""


ErrorCode = Literal[
    "invalid_request", "not_found", "conflict", "turn_failed", "stopped", "shutting_down"
]
"""Why a turn ended without an answer: the request's fault (``invalid_request``,
``not_found``, ``conflict``), the service's (``turn_failed``), or a stop or shutdown."""


class ErrorEvent(TypedDict):
    """The turn ended without an answer: why (``code``) and a short message."""

    event: Literal["error"]
    code: ErrorCode
    message: str


class KeepAliveEvent(TypedDict):
    """No event for a while (:func:`drain`): not an event of the turn, never sent as one."""

    event: Literal["keep-alive"]


Event = GraphEvent | CitationEvent | DoneEvent | ErrorEvent
"""An event of a turn's stream, the graph's or the HTTP layer's."""


def error_event(code: ErrorCode, message: str) -> ErrorEvent:
    """The ``error`` event that ends a turn's stream, its message cut to 500 characters."""
    return ErrorEvent(event="error", code=code, message=message[:500])


def _jsonable(value: object) -> object:
    """A value of an event's data that ``json`` cannot write: a record of the HTTP
    schema as its fields, anything else as text."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    return str(value)


def event_json(event: Event) -> str:
    """The data of ``event`` as JSON: its fields but ``event``, which names it."""
    data = {k: v for k, v in event.items() if k != "event"}
    return json.dumps(data, default=_jsonable)


def sse(event: Event) -> str:
    """``event`` as a server-sent event: its name, then its data as JSON."""
    return f"event: {event['event']}\ndata: {event_json(event)}\n\n"


#: Streamed replies must reach the client token by token: no caching, no proxy buffering.
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

#: What :func:`drain` yields after ``keepalive_s`` without an event.
KEEPALIVE = KeepAliveEvent(event="keep-alive")

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

    def put(self, event: Event) -> None:
        """Write ``event``."""
        self.queue.put_nowait(event)

    def end(self) -> None:
        """End the stream: :func:`drain` returns after the events written so far."""
        self.queue.put_nowait(None)

    def custom(self, event: GraphEvent) -> None:
        """Write the events of one event of the graph's custom stream."""
        if event["event"] == "token":
            self._token(event)
            return
        if event["event"] == "sources":
            self.sources = event["sources"]
            self._sent_sources = True
        elif event["event"] in ("repetition", "reset"):
            self._text, self._cited = "", set()
        self.put(event)

    def _token(self, event: TokenEvent) -> None:
        """A token, after the sources, then the citations its marker completes."""
        if not self._sent_sources:
            self.put(SourcesEvent(event="sources", sources=[]))
            self._sent_sources = True
        self._text += event["text"]
        self.put(event)
        for m in markers(self._text):
            n = int(m.group(1))
            if m.group(0) not in self._cited and 1 <= n <= len(self.sources):
                self._cited.add(m.group(0))
                self.put(
                    CitationEvent(event="citation", marker=m.group(0), source=self.sources[n - 1])
                )


async def drain(
    queue: asyncio.Queue[Event | None], *, keepalive_s: float | None = None
) -> AsyncIterator[Event | KeepAliveEvent]:
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
