"""Document routes: upload (ingested in the background), list, read status, delete.

Ingestion and deletion are :mod:`convrag.ingest`'s; these routes check the upload's
name, format and size, and map ingestion errors to 4xx answers.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, HTTPException, Response, UploadFile, status

from convrag.api.deps import DocumentId, ServicesDep, SettingsDep, WorkspaceDep
from convrag.api.errors import not_found
from convrag.api.schemas import DocumentOut
from convrag.documents import SUPPORTED, IngestError
from convrag.ingest import accept_upload, delete_document

router = APIRouter(tags=["documents"])

#: The longest file name most file systems store (ext4, APFS, NTFS: 255 bytes or units).
MAX_FILENAME_BYTES = 255


def upload_name(filename: str | None) -> str:
    """The name to store an upload under, or a 422 naming what is wrong with it.

    The upload is saved under this name, so it must be one path component the file
    system accepts: a client's directories (``../../etc/passwd.txt``, ``C:\\x\\a.txt``)
    are dropped, and a name with control characters (NUL, newline) or over
    :data:`MAX_FILENAME_BYTES` bytes is refused here rather than failing as a 500 when
    written.
    """
    raw = filename or ""
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in raw):
        raise HTTPException(
            422,
            "file: the filename contains control characters (such as NUL or a newline); "
            "rename the file with printable characters only",
        )
    if any(0xD800 <= ord(c) <= 0xDFFF for c in raw):
        raise HTTPException(
            422, "file: the filename is not valid UTF-8; rename the file or send it as UTF-8"
        )
    name = raw.replace("\\", "/").rsplit("/", 1)[-1].strip()
    if name in ("", ".", ".."):
        raise HTTPException(
            422, "file: a filename is required (the multipart part's filename, e.g. report.pdf)"
        )
    size = len(name.encode("utf-8"))
    if size > MAX_FILENAME_BYTES:
        raise HTTPException(
            422,
            f"file: the filename is {size} bytes long (UTF-8), over the limit of "
            f"{MAX_FILENAME_BYTES} bytes; rename the file to a shorter name",
        )
    return name


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
    or as ``application/octet-stream`` alike). The name is checked first (see
    :func:`upload_name`); a ``.jsonl.gz`` file that decompresses to more than
    ``MAX_DECOMPRESSED_BYTES`` gets a 422 naming that limit.
    """
    name = upload_name(file.filename)
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
