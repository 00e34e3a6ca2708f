"""The command line's operations on a running service: ``POST /admin/v1/<name>``.

They are what ``convrag documents list``, ``keys create|list|revoke``, ``documents
delete`` and ``ask`` run (:data:`convrag.admin.OPERATIONS`), here on the stores the
service already holds open, so the command answers at once instead of starting them.

They open with the token of the service's record (``<data_dir>/service.json``, mode
600, made anew at each ``convrag serve``), never with a workspace's API key: a service
started otherwise (tests, ``langgraph dev``, an app embedded elsewhere) has no record,
and these routes then answer 404 as if they did not exist. They are left out of the
OpenAPI document: they are the command line's, not the API's.
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException, Request, status
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from convrag.admin import OPERATIONS, Opened, Result
from convrag.api.deps import AssistantDep, ServicesDep
from convrag.api.errors import no_route, unauthorized
from convrag.service_record import read_record

router = APIRouter(tags=["admin"], include_in_schema=False)


async def admin_token(request: Request, services: ServicesDep) -> None:
    """Pass a request whose ``Authorization: Bearer`` token is that of this data
    directory's service record; 404 when there is no record, 401 for any other token."""
    record = read_record(services.settings.data_dir)
    if record is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, no_route(request.method, request.url.path))
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(
        token.strip().encode(), record.token.encode()
    ):
        raise unauthorized(
            "the admin operations open only with the token of the service's record "
            "(CONVRAG_DATA_DIR/service.json), which the convrag command line reads"
        )


@router.post("/admin/v1/{name}", dependencies=[Depends(admin_token)])
async def run_operation(
    name: str,
    services: ServicesDep,
    assistant: AssistantDep,
    body: Annotated[dict[str, Any], Body()],
) -> Result:
    """Run the operation ``name`` on this service's stores; 404 for an unknown name,
    422 naming the problem for a request it refuses."""
    operation = OPERATIONS.get(name)
    if operation is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no admin operation {name!r}")
    try:
        request = operation.request.model_validate(body)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from None
    try:
        return await operation.run(Opened(services.db, services, assistant), request)
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
