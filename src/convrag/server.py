"""The HTTP service: conversations with SSE streaming, an OpenAI-compatible endpoint,
documents, sources, health and metrics.

Every ``/v1`` route needs ``Authorization: Bearer <key>``; a key belongs to one
workspace, and another workspace's ids answer 404, never data. Start it with
``convrag serve``. The app itself is built in :mod:`convrag.api.app` from the routers
in :mod:`convrag.api.routers`; this module serves it and keeps ``create_app``
importable from here.
"""

from __future__ import annotations

import copy
from typing import Any

from convrag.api.app import GRACEFUL_S, create_app
from convrag.config import Settings

__all__ = ["GRACEFUL_S", "create_app", "log_config", "run"]


def log_config() -> dict[str, Any]:
    """uvicorn's logging with a time on every line, plus convrag's own loggers at INFO
    with their level and name: without it their lines (the startup summary, the sweep's
    count, a fallback's reason) would go unformatted to stderr, or not at all below
    WARNING."""
    from uvicorn.config import LOGGING_CONFIG

    config: dict[str, Any] = copy.deepcopy(LOGGING_CONFIG)
    formatters = config["formatters"]
    formatters["default"]["fmt"] = "%(asctime)s %(levelprefix)s %(message)s"
    formatters["access"]["fmt"] = (
        '%(asctime)s %(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s'
    )
    formatters["convrag"] = {
        "()": "uvicorn.logging.DefaultFormatter",
        "fmt": "%(asctime)s %(levelprefix)s %(name)s: %(message)s",
        "use_colors": None,
    }
    config["handlers"]["convrag"] = {
        "formatter": "convrag",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
    }
    config["loggers"]["convrag"] = {"handlers": ["convrag"], "level": "INFO", "propagate": False}
    return config


def run(host: str, port: int, settings: Settings | None = None) -> None:
    """Serve with uvicorn; SIGTERM stops the embedded stores through the lifespan."""
    import uvicorn

    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_config=log_config(),
        timeout_graceful_shutdown=GRACEFUL_S,
    )
