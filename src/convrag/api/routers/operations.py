"""Operational routes, outside ``/v1`` and without an API key: health and metrics.

They are for load balancers and Prometheus scrapers, which hold no workspace key.
"""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Response, status
from fastapi.responses import PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from convrag.api.deps import ServicesDep
from convrag.api.errors import RETRY_AFTER_S
from convrag.api.metrics import REGISTRY
from convrag.api.schemas import HealthOut

router = APIRouter(tags=["operations"])

#: Seconds each store gets to answer before it counts as down.
HEALTH_TIMEOUT_S = 2.0


@router.get("/healthz", response_model=HealthOut)
@router.head("/healthz", include_in_schema=False)  # load balancers probe with HEAD
async def healthz(services: ServicesDep, response: Response) -> HealthOut:
    """Whether Postgres and Milvus answer."""
    pg = await services.db.ping(timeout=HEALTH_TIMEOUT_S)
    try:
        milvus = await asyncio.wait_for(asyncio.to_thread(services.index.ping), HEALTH_TIMEOUT_S)
    except TimeoutError:
        milvus = False
    ok = pg and milvus
    if not ok:
        response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return HealthOut(status="ok" if ok else "degraded", postgres=pg, milvus=milvus)


@router.get("/metrics", response_class=PlainTextResponse)
async def metrics() -> Response:
    """Prometheus metrics."""
    return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)
