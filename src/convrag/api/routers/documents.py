"""Document routes: upload (ingested in the background), list, read status, delete.

Ingestion and deletion are :mod:`convrag.ingest`'s; these routes check the upload's
name, format and size, and map ingestion errors to 4xx answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, File, HTTPException, Response, UploadFile, status

from convrag.api.deps import DocumentId, ServicesDep, SettingsDep, WorkspaceDep
from convrag.api.errors import not_found
from convrag.api.schemas import DocumentOut
from convrag.documents import SUPPORTED, IngestError
from convrag.ingest import accept_upload, delete_document

router = APIRouter(tags=["documents"])


@router.post("/v1/documents", response_model=DocumentOut, status_code=202)
async def upload_document(
    workspace: WorkspaceDep,
    services: ServicesDep,
    settings: SettingsDep,
    file: Annotated[UploadFile, File(description="A .txt, .md, .html, .pdf, .docx or .jsonl file")],
) -> DocumentOut:
    """Upload a file; it is ingested in the background (poll `GET /v1/documents/{id}`).

    The format is the file name's: its content type is not checked (clients send Word
    documents as ``application/vnd.openxmlformats-officedocument.wordprocessingml.document``
    or as ``application/octet-stream`` alike).
    """
    name = Path(file.filename or "").name
    if not name:
        raise HTTPException(422, "file: a filename is required")
    lowered = name.lower()
    if not any(lowered.endswith(s) for s in SUPPORTED):
        raise HTTPException(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            f"file: unsupported format of {name!r}; supported: {', '.join(SUPPORTED)}",
        )
    data = await file.read(settings.max_file_bytes + 1)
    if len(data) > settings.max_file_bytes:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            f"file: over the {settings.max_file_bytes} byte limit (the server's MAX_FILE_BYTES)",
        )
    try:
        document_id = await accept_upload(services, workspace, name, data)
    except IngestError as exc:
        raise HTTPException(422, f"file: {exc}") from exc
    row = await services.db.get_document(workspace, document_id)
    assert row is not None
    return DocumentOut.from_row(row)


@router.get("/v1/documents", response_model=list[DocumentOut])
async def list_documents(workspace: WorkspaceDep, services: ServicesDep) -> list[DocumentOut]:
    return [DocumentOut.from_row(r) for r in await services.db.list_documents(workspace)]


@router.get("/v1/documents/{document_id}", response_model=DocumentOut)
async def get_document(
    document_id: DocumentId, workspace: WorkspaceDep, services: ServicesDep
) -> DocumentOut:
    row = await services.db.get_document(workspace, document_id)
    if row is None:
        raise not_found("document", document_id)
    return DocumentOut.from_row(row)


@router.delete("/v1/documents/{document_id}", status_code=204)
async def remove_document(
    document_id: DocumentId, workspace: WorkspaceDep, services: ServicesDep
) -> Response:
    """Delete a document and every chunk of it, in Postgres and Milvus."""
    if not await delete_document(services, workspace, document_id):
        raise not_found("document", document_id)
    return Response(status_code=204)
