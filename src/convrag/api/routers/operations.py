"""Operational routes, outside ``/v1`` and without an API key: health and metrics.

They are for load balancers and Prometheus scrapers, which hold no workspace key.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from fastapi import APIRouter, Response, status
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST

from convrag.api.deps import ServicesDep
from convrag.api.errors import RETRY_AFTER_S
from convrag.api.metrics import exposition
from convrag.api.schemas import HealthOut
from convrag.services import Services

router = APIRouter(tags=["operations"])

#: Seconds each store gets to answer before it counts as down. The checks run at once,
#: so the probe answers within this (a load balancer's probe waits about 2 s).
HEALTH_TIMEOUT_S = 1.5

#: Free bytes on the data directory's disk under which the service counts as degraded:
#: the embedded PostgreSQL and Milvus Lite, and uploads, write there, and fail once it
#: is full (a turn then answers "the database is out of disk space").
MIN_FREE_BYTES = 100 * 2**20


@router.get("/healthz", response_model=HealthOut)
@router.head("/healthz", include_in_schema=False)  # load balancers probe with HEAD
async def healthz(services: ServicesDep, response: Response) -> HealthOut:
    """Whether Postgres answers, the vector index is usable (Milvus answers and the
    collection is loaded: a restarted Milvus has it released, and this check loads it
    again) and the data directory's disk has room."""
    pg, index, disk = await asyncio.gather(
        services.db.ping(timeout=HEALTH_TIMEOUT_S),
        _index_problem(services),
        _disk_problem(services.settings.data_dir),
    )
    problems = [
        *([] if pg else [f"PostgreSQL does not answer within {HEALTH_TIMEOUT_S:g} s"]),
        *([index] if index else []),
        *([disk] if disk else []),
    ]
    if problems:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return HealthOut(
        status="degraded" if problems else "ok",
        postgres=pg,
        milvus=index is None,
        disk=disk is None,
        detail="; ".join(problems) or None,
    )


async def _index_problem(services: Services) -> str | None:
    """What is wrong with the vector index, or None when it is usable."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(services.index.problem), HEALTH_TIMEOUT_S)
    except TimeoutError:
        return f"Milvus does not answer within {HEALTH_TIMEOUT_S:g} s"


async def _disk_problem(data_dir: Path) -> str | None:
    """What is wrong with the free space of ``data_dir``'s disk, or None when it has at
    least :data:`MIN_FREE_BYTES` free."""
    try:
        usage = await asyncio.wait_for(
            asyncio.to_thread(shutil.disk_usage, data_dir), HEALTH_TIMEOUT_S
        )
    except TimeoutError:
        return f"the data directory {data_dir}: no free space known within {HEALTH_TIMEOUT_S:g} s"
    except OSError as exc:
        return f"the data directory {data_dir}: no free space known ({exc.strerror or exc})"
    if usage.free < MIN_FREE_BYTES:
        return (
            f"the data directory {data_dir} has {usage.free} bytes free, under the "
            f"{MIN_FREE_BYTES} the service needs; free space on its disk"
        )
    return None


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics() -> Response:
    """Prometheus metrics."""
    return Response(exposition(), media_type=CONTENT_TYPE_LATEST)
