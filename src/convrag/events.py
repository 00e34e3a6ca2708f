"""Every event a turn streams, typed: the graph's custom events and the HTTP layer's own.

Nodes emit the graph events with :func:`emit` (LangGraph's ``custom`` stream mode); the
HTTP layer relays them as server-sent events under the same names and adds ``citation``,
``done`` and ``error``. In order: ``rewrite``, ``sources`` (always before any token),
``token``*, ``citation`` (as a resolvable marker appears), ``repetition`` (a regeneration
starts: discard the tokens so far), ``reset`` (the LLM failed mid-answer: discard the
tokens so far), then ``done`` or ``error``.
"""

from __future__ import annotations

from typing import Any, Literal

from langgraph.runtime import Runtime
from typing_extensions import TypedDict

from convrag.records import SourceOut
from convrag.state import Classification, RewriteMethod


class RewriteEvent(TypedDict):
    """How the message was classified and the query retrieval used."""

    event: Literal["rewrite"]
    classification: Classification
    query: str
    method: RewriteMethod


class SourcesEvent(TypedDict):
    """The numbered sources the answer may cite (sent again if web search adds some)."""

    event: Literal["sources"]
    sources: list[SourceOut]


class TokenEvent(TypedDict):
    """A piece of the answer, from ``synthesize`` or ``regenerate``."""

    event: Literal["token"]
    text: str
    node: str


class RepetitionEvent(TypedDict):
    """A regeneration starts: the tokens so far are discarded."""

    event: Literal["repetition"]
    attempt: int
    excluded_entities: list[str]
    overlap_ratio: float


class ResetEvent(TypedDict):
    """The LLM failed mid-answer: the tokens so far are discarded."""

    event: Literal["reset"]
    reason: str
    node: str


GraphEvent = RewriteEvent | SourcesEvent | TokenEvent | RepetitionEvent | ResetEvent


def emit(runtime: Runtime[Any], event: GraphEvent) -> None:
    """Stream ``event`` to whoever watches the run's ``custom`` mode."""
    runtime.stream_writer(event)
