"""Small helpers the nodes share."""

from __future__ import annotations

import time
import uuid
from typing import Any

from langgraph.runtime import Runtime

from convrag.graph.context import Context
from convrag.graph.state import State

_CONV_NS = uuid.UUID("6e3f1c52-2b7d-4c09-8d0b-4b1f7f0d2a11")


def ms_since(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)


def conversation_uuid(value: str) -> str:
    """Conversation ids are UUIDs; any other thread id maps to a stable UUID5."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return str(uuid.uuid5(_CONV_NS, value))


def workspace_of(state: State, runtime: Runtime[Context]) -> str:
    return state.get("workspace_id") or runtime.context.workspace_id


def emit(runtime: Runtime[Context], event: str, **data: Any) -> None:
    """A custom stream event (``stream_mode="custom"``): what the SSE endpoint relays."""
    runtime.stream_writer({"event": event, **data})
