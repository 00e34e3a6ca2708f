"""The caller's workspace: ``GET /v1/workspace`` says which one its API key opens.

A key is an opaque secret; the chat page shows this name once a pasted key is accepted,
so the user sees whose documents the answers come from.
"""

from __future__ import annotations

from fastapi import APIRouter

from convrag.api.deps import WorkspaceDep
from convrag.api.schemas import WorkspaceOut, keyed_route_responses

router = APIRouter(tags=["workspace"], responses=keyed_route_responses())


@router.get("/v1/workspace", response_model=WorkspaceOut)
async def read_workspace(workspace: WorkspaceDep) -> WorkspaceOut:
    """The workspace of the API key the request carries (401 without a valid key)."""
    return WorkspaceOut(workspace=workspace)
