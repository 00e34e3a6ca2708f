"""The stream a turn writes: its events, as the run puts them and as routes read them.

A turn's run (:class:`~convrag.api.turns.TurnRunner`) writes typed events to a queue
through :class:`TurnEvents`, which turns the graph's custom stream
(:data:`~convrag.events.GraphEvent`) into them: ``sources`` always before any ``token``,
a ``citation`` as a resolvable marker appears, and ``repetition`` or ``reset`` to
discard the tokens so far; the run ends it with ``done`` or ``error``. ``None`` ends the
queue. The routes read it with :func:`drain`, write each event with :func:`sse` and
send the stream with :func:`event_stream` (sse-starlette's response, which also sends
the keep-alives and stops the stream when the client goes away).

Every event is a typed record whose ``event`` names it, the graph's
(:mod:`convrag.events`) and the HTTP layer's own, here: :class:`CitationEvent`,
:class:`DoneEvent` (built by :func:`~convrag.api.turn_replies.done_data`) and
:class:`ErrorEvent` (built by :func:`error_event`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import AppStatus
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
    """The turn's first event is late (a route waits for it before it opens the stream):
    not an event of the turn, sent as :func:`keep_alive`."""

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


SSE_SEP = "\n"
"""The line ending of every event and comment the streams write: a bare newline, as
they always have (sse-starlette's default is ``\\r\\n``)."""


def sse(event: Event) -> ServerSentEvent:
    """``event`` as a server-sent event: its name, then its data as JSON."""
    return ServerSentEvent(event_json(event), event=event["event"], sep=SSE_SEP)


def sse_data(data: str) -> ServerSentEvent:
    """A server-sent event of ``data`` alone, unnamed (an OpenAI chunk, ``[DONE]``)."""
    return ServerSentEvent(data, sep=SSE_SEP)


def keep_alive() -> ServerSentEvent:
    """The ``: keep-alive`` comment: clients skip it, proxies see bytes and keep an
    idle stream open."""
    return ServerSentEvent(comment="keep-alive", sep=SSE_SEP)


# sse-starlette cuts every stream as soon as the server is told to stop, and from then
# on cuts each new one at once in this process (its flag is never reset). The app's own
# shutdown (convrag.api.app) lets open streams run on, and stops the turns still running
# a second before the server's graceful period ends: their streams end with an ``error``
# event (``shutting_down``) rather than being cut.
AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]

#: Streamed replies must reach the client token by token: not cached (sse-starlette's
#: own default is ``no-store``; it also sends ``X-Accel-Buffering: no`` against proxy
#: buffering).
_SSE_HEADERS = {"Cache-Control": "no-cache"}

#: What a route opens the stream with when the turn's first event is late.
KEEPALIVE = KeepAliveEvent(event="keep-alive")


def event_stream(
    events: AsyncIterable[ServerSentEvent],
    *,
    keepalive_s: float = 0,
    headers: Mapping[str, str] | None = None,
) -> EventSourceResponse:
    """The streamed reply of ``events``, with a :func:`keep_alive` comment every
    ``keepalive_s`` seconds (0: none): a stalled LLM can leave a stream silent for a
    minute, and proxies with a 60 s idle timeout then cut it. A client that goes away
    ends the stream (not its turn, which runs on and is stored).

    A shutdown signal does not cut the stream: sse-starlette's automatic drain is off
    (above)."""
    return EventSourceResponse(
        events,
        headers={**_SSE_HEADERS, **(headers or {})},
        ping=keepalive_s,
        sep=SSE_SEP,
        ping_message_factory=keep_alive,
    )


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


async def drain(queue: asyncio.Queue[Event | None]) -> AsyncIterator[Event]:
    """The turn's events until it ends."""
    while (item := await queue.get()) is not None:
        yield item
