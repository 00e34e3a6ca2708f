"""Document routes: upload (ingested in the background), list, read status and text,
delete.

Ingestion and deletion are :mod:`convrag.ingest`'s; these routes check the upload's
name, format and size, and map ingestion errors to 4xx answers.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, File, HTTPException, Query, Request, Response, UploadFile, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse

from convrag.api.deps import DocumentId, DocumentPageDep, ServicesDep, SettingsDep, WorkspaceDep
from convrag.api.errors import not_found
from convrag.api.middleware import file_over_limit
from convrag.api.schemas import (
    UPLOAD_LISTED,
    DocumentOut,
    UploadOut,
    error_responses,
    keyed_route_responses,
)
from convrag.documents.base import IngestError
from convrag.documents.load import SUPPORTED
from convrag.ingest import DocumentBusy, delete_document
from convrag.services import Services
from convrag.uploads import accept_upload

router = APIRouter(tags=["documents"], responses=keyed_route_responses())

#: The longest file name most file systems store (ext4, APFS, NTFS: 255 bytes or units).
MAX_FILENAME_BYTES = 255

#: The most characters one ``GET /v1/documents/{id}/text`` may ask for with ``limit``.
MAX_TEXT_CHARS = 10_000_000


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


_NOT_FOUND = "No such document in this workspace."


@router.post(
    "/v1/documents",
    response_model=UploadOut,
    status_code=202,
    responses=error_responses(
        {
            413: "The file is over `MAX_FILE_BYTES`.",
            415: "The file name's format is not one of the supported ones.",
            422: "A bad file name, an empty or unreadable file, or a `.jsonl.gz` over "
            "`MAX_DECOMPRESSED_BYTES`.",
        }
    ),
)
async def upload_document(
    workspace: WorkspaceDep,
    services: ServicesDep,
    settings: SettingsDep,
    file: Annotated[UploadFile, File(description="A .txt, .md, .html, .pdf, .docx or .jsonl file")],
    request: Request,
) -> UploadOut:
    """Upload a file; it is ingested in the background (poll `GET /v1/documents/{id}`).

    The answer describes the file's first document and lists the documents it holds in
    ``documents`` (the first 100; ``n_documents`` counts them all): a ``.jsonl`` or
    ``.jsonl.gz`` file makes one per record, all ``processing`` until the ingest ends.

    The format is the file name's: its content type is not checked (clients send Word
    documents as ``application/vnd.openxmlformats-officedocument.wordprocessingml.document``
    or as ``application/octet-stream`` alike). The name is checked first (see
    :func:`upload_name`); a ``.jsonl.gz`` file that decompresses to more than
    ``MAX_DECOMPRESSED_BYTES`` gets a 422 naming that limit.
    """
    files = (await request.form()).getlist("file")
    if len(files) > 1:
        raise HTTPException(422, f"file: one file per upload, got {len(files)}; send each alone")
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
            status.HTTP_413_CONTENT_TOO_LARGE, file_over_limit(settings.max_file_bytes)
        )
    try:
        document_ids = await accept_upload(services, workspace, name, data)
    except IngestError as exc:
        raise HTTPException(422, f"file: {exc}") from exc
    rows = await services.db.documents.get_documents(workspace, document_ids[:UPLOAD_LISTED])
    assert rows, "accept_upload records every document before it returns"
    return UploadOut.model_validate(
        {**rows[0], "documents": rows, "n_documents": len(document_ids)}
    )


@router.get(
    "/v1/documents",
    response_model=list[DocumentOut],
    responses={
        200: {
            "description": "One page of documents, oldest first. When more follow, the "
            '`Link` header (`<url>; rel="next"`) gives the next page\'s URL and '
            "`X-Next-Cursor` its cursor.",
            "headers": {
                "Link": {
                    "description": '`<url>; rel="next"` of the next page, if any.',
                    "schema": {"type": "string"},
                },
                "X-Next-Cursor": {
                    "description": "The `cursor` of the next page, if any.",
                    "schema": {"type": "string"},
                },
            },
        },
        **error_responses({422: "`limit` out of 1..100, or a malformed `cursor`."}),
    },
)
async def list_documents(
    request: Request,
    response: Response,
    workspace: WorkspaceDep,
    services: ServicesDep,
    page: DocumentPageDep,
) -> list[DocumentOut]:
    """The workspace's documents, oldest first, a page at a time (``limit``, default 20).

    The body stays a plain list; the next page is in the ``Link`` and ``X-Next-Cursor``
    headers, which are absent on the last page.
    """
    rows = await services.db.documents.list_documents(
        workspace, limit=page.limit + 1, after=page.after
    )
    kept, next_cursor = page.cut(rows, lambda r: (r["created_at"], str(r["id"])))
    if next_cursor is not None:
        url = request.url.include_query_params(limit=page.limit, cursor=next_cursor)
        response.headers["Link"] = f'<{url}>; rel="next"'
        response.headers["X-Next-Cursor"] = next_cursor
    return [DocumentOut.model_validate(r) for r in kept]


@router.get(
    "/v1/documents/{document_id}",
    response_model=DocumentOut,
    responses=error_responses({404: _NOT_FOUND}),
)
async def get_document(
    document_id: DocumentId, workspace: WorkspaceDep, services: ServicesDep
) -> DocumentOut:
    """The document's row: its ingest ``status`` (``processing``, ``ready`` or
    ``failed`` with ``error``) and number of chunks."""
    return DocumentOut.model_validate(await _document_row(services, workspace, document_id))


async def _document_row(services: Services, workspace: str, document_id: str) -> dict[str, Any]:
    """The workspace's document row, or the 404 for one it does not hold."""
    row = await services.db.documents.get_document(workspace, document_id)
    if row is None:
        raise not_found("document", document_id)
    return row


@router.get(
    "/v1/documents/{document_id}/text",
    response_class=PlainTextResponse,
    responses={
        200: {
            "content": {"text/plain": {"schema": {"type": "string"}}},
            "description": "The text, or the part of it that `offset` and `limit` ask for. "
            "`X-Total-Chars` gives the whole text's length; `X-Next-Offset` the offset of "
            "the rest, when some is left.",
        },
        **error_responses(
            {
                404: _NOT_FOUND,
                409: "The document is still processing, or its ingest failed.",
                422: "`offset` is negative or past the end of the text, or `limit` is "
                "out of range.",
            },
            plain_route=True,
        ),
    },
)
async def document_text(
    document_id: DocumentId,
    workspace: WorkspaceDep,
    services: ServicesDep,
    offset: Annotated[int, Query(ge=0, description="The first character to send.")] = 0,
    limit: Annotated[
        int | None,
        Query(ge=1, le=MAX_TEXT_CHARS, description="At most this many characters."),
    ] = None,
) -> PlainTextResponse:
    """The document's extracted text, as indexed: its chunks in order with their overlaps
    given once (documents keep no other copy of their text).

    ``offset`` and ``limit`` count characters (Unicode code points), for reading a large
    document a part at a time.
    """
    row = await _document_row(services, workspace, document_id)
    if row["status"] != "ready":
        why = f": {row['error']}" if row["status"] == "failed" and row["error"] else ""
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            f"document {document_id} is {row['status']}{why}; its text is readable once "
            "its status is ready",
        )
    text = await services.db.documents.document_text(workspace, document_id)
    if text is None:  # deleted between the two reads
        raise not_found("document", document_id)
    if offset > len(text):
        raise RequestValidationError(
            [
                {
                    "type": "value_error",
                    "loc": ("query", "offset"),
                    "msg": f"{offset} is past the end of the text ({len(text)} characters); "
                    f"use 0 to {len(text)}",
                    "input": offset,
                }
            ]
        )
    end = len(text) if limit is None else min(len(text), offset + limit)
    headers = {"X-Total-Chars": str(len(text))}
    if end < len(text):
        headers["X-Next-Offset"] = str(end)
    return PlainTextResponse(text[offset:end], headers=headers)


@router.delete(
    "/v1/documents/{document_id}",
    status_code=204,
    responses=error_responses(
        {404: _NOT_FOUND, 409: "The document is still processing: its ingest is running."}
    ),
)
async def remove_document(
    document_id: DocumentId, workspace: WorkspaceDep, services: ServicesDep
) -> Response:
    """Delete a document and every chunk of it, in Postgres and Milvus.

    A document still ``processing`` gets 409: its ingest would store it again when it
    ends. Delete it once ``GET /v1/documents/{id}`` says ``ready`` or ``failed``.
    """
    try:
        deleted = await delete_document(services, workspace, document_id)
    except DocumentBusy as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from exc
    if not deleted:
        raise not_found("document", document_id)
    return Response(status_code=204)
