"""The HTTP service: conversations with SSE streaming, an OpenAI-compatible endpoint,
documents, sources, health and metrics.

Every ``/v1`` route needs ``Authorization: Bearer <key>``; a key belongs to one
workspace, and another workspace's ids answer 404, never data. Start it with
``convrag serve``. The app itself is built in :mod:`convrag.api.app` from the routers
in :mod:`convrag.api.routers`; this module serves it and keeps ``create_app``
importable from here.
"""

from __future__ import annotations

from convrag.api.app import create_app
from convrag.config import Settings

__all__ = ["GRACEFUL_S", "create_app", "run"]


GRACEFUL_S = 5
"""Seconds uvicorn lets open connections (answer streams) finish after SIGTERM; with the
lifespan's own bounded steps, a shutdown takes about 10 s at most."""


def run(host: str, port: int, settings: Settings | None = None) -> None:
    """Serve with uvicorn; SIGTERM stops the embedded stores through the lifespan."""
    import uvicorn

    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_level="info",
        timeout_graceful_shutdown=GRACEFUL_S,
    )
