"""The files behind a workspace's documents: uploads saved and ingested in the
background (:func:`accept_upload`), resumed after a shutdown, read again with a newer
reader (:func:`reread_workspace`), deleted with their document, and files gone from
disk (:func:`missing_files`). The writing itself is :mod:`convrag.ingest`'s.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convrag.documents.base import IngestError, SourceDocument
from convrag.documents.load import load_path
from convrag.embeddings import ChildDied
from convrag.ids import check_id, document_id_for
from convrag.ingest import (
    IngestReport,
    IngestStopped,
    delete_document,
    failure_reason,
    file_gone,
    ingest_documents,
    read_from_file,
    remove_upload,
)
from convrag.stores.base import RESUME_LOCK

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from convrag.services import Services


async def accept_upload(
    services: Services, workspace_id: str, filename: str, data: bytes
) -> list[str]:
    """Save an uploaded file and ingest it in the background; returns the ids of the
    documents it holds, in file order (a ``.jsonl`` file holds one per record).

    The file is read before this returns, so a bad one raises :class:`IngestError`
    (naming ``filename``, not the path it was saved at) and no document is recorded. Its
    documents are recorded as ``processing`` first, then ``ready`` by the ingest or
    ``failed`` with the error, which the caller polls for.

    The saved file is the document's original: a shutdown's stopped ingest resumes from
    it, and :func:`reread_workspace` reads it again with a newer reader. It goes with the
    last document read from it, or when a later upload of the same name replaces it. A
    refused or failed upload leaves neither file nor directory behind.
    """
    settings = services.settings
    upload_dir = settings.data_dir / "uploads" / workspace_id / uuid.uuid4().hex
    path = upload_dir / filename
    try:
        upload_dir.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return await _ingest_saved(services, workspace_id, path)
    except BaseException as exc:
        await asyncio.to_thread(remove_upload, settings.data_dir, path)
        if isinstance(exc, IngestError):
            raise IngestError(str(exc).replace(str(path), filename)) from exc
        raise


async def resume_stopped_uploads(services: Services) -> int:
    """At start: ingest again, from their saved files, the uploads a shutdown stopped.
    An upload whose file is gone or no longer reads is marked failed. Returns how many
    were taken up.

    One process at a time (``serve --workers N`` starts N at once): taking one up records
    its documents ``processing`` again, no longer stopped, so the next process finds it
    taken up instead of ingesting it a second time beside the first."""
    resumed = 0
    async with services.db.exclusive(RESUME_LOCK):
        for workspace_id, upload_path in await services.db.documents.stopped_uploads():
            path = Path(upload_path) if upload_path else None
            try:
                if path is None or not path.is_file():
                    raise IngestError("the saved file is gone")
                await _ingest_saved(services, workspace_id, path)
                resumed += 1
            except IngestError:
                await services.db.documents.fail_stopped_uploads(workspace_id, upload_path)
                if path is not None:
                    await asyncio.to_thread(remove_upload, services.settings.data_dir, path)
    if resumed:
        log.info("resumed %d uploads a shutdown had stopped", resumed)
    return resumed


def is_jsonl(name: str) -> bool:
    """Whether a file of this name is a JSONL corpus (one document per record)."""
    return name.lower().endswith((".jsonl", ".jsonl.gz"))


async def _ingest_saved(services: Services, workspace_id: str, path: Path) -> list[str]:
    """Read a saved upload, record its documents ``processing`` and ingest them in the
    background; the file stays as their original, unless the ingest fails (see
    :func:`accept_upload`)."""
    settings = services.settings
    docs = await _read_upload(services, path)
    ids = list(dict.fromkeys(document_id_for(workspace_id, d.source) for d in docs))
    replaced = {
        str(row["upload_path"])
        for row in await services.db.documents.get_documents(workspace_id, ids)
        if row.get("upload_path") and row["upload_path"] != str(path)
    }

    async def mark(status: str, error: str | None = None) -> None:
        for d in docs:
            await services.db.documents.upsert_document_status(
                workspace_id,
                document_id_for(workspace_id, d.source),
                d.source,
                status=status,
                title=d.title,
                error=error,
                upload_path=str(path),
            )

    await mark("processing")

    async def progress(document_id: str, done: int, total: int) -> None:
        await services.db.documents.set_document_progress(workspace_id, document_id, done, total)

    async def run() -> None:
        try:
            await ingest_documents(services, workspace_id, docs, chunk_progress=progress)
        except IngestStopped:  # the next start takes it up again, from the saved file
            await services.db.documents.mark_stopped(workspace_id, ids)
            return
        except asyncio.CancelledError:  # a shutdown that did not wait for the batch
            await asyncio.shield(services.db.documents.mark_stopped(workspace_id, ids))
            raise
        except Exception as exc:  # recorded on the document, readable by the client
            await mark("failed", error=failure_reason(exc))
            await asyncio.to_thread(remove_upload, settings.data_dir, path)
            return
        for old in replaced:  # an upload of the same name replaced this original
            if not await services.db.documents.upload_in_use(workspace_id, old):
                await asyncio.to_thread(remove_upload, settings.data_dir, Path(old))

    services.spawn(run(), ingest_of=path.name)
    return ids


async def _read_file(services: Services, path: Path) -> list[SourceDocument]:
    """The documents of a file, read in the reader process (never behind an ingest's
    calls: an upload waits on it for its 202), within the settings' limits."""
    settings = services.settings
    return await services.bulk.read(
        load_path,
        path,
        max_bytes=settings.max_file_bytes,
        max_decompressed_bytes=settings.max_decompressed_bytes,
        max_records=settings.max_records_per_file,
    )


async def _read_upload(services: Services, path: Path) -> list[SourceDocument]:
    """The documents of a saved upload, named as uploads are (:func:`accept_upload`)."""
    filename = path.name
    try:
        docs = await _read_file(services, path)
    except ChildDied as exc:
        raise IngestError(f"{filename}: reading it stopped the file reader: {exc}") from exc
    if is_jsonl(filename):
        return docs
    # Each upload is saved under a fresh directory; naming the document by the file's
    # name instead makes uploading the same name again replace it, as ingesting the
    # same path again does. A .jsonl record is named by its _id, as on the CLI.
    (doc,) = docs
    meta = {k: v for k, v in doc.metadata.items() if k != "path"}
    return [replace(doc, source=f"upload:{filename}", metadata={**meta, "filename": filename})]


@dataclass
class RereadReport:
    """What :func:`reread_workspace` did: files read again, and documents left as they
    were because their original is gone."""

    files: int = 0
    ingest: IngestReport = field(default_factory=IngestReport)
    missing: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {"files": self.files, **self.ingest.as_json(), "missing": self.missing}


async def _originals(services: Services, workspace_id: str) -> tuple[dict[str, bool], list[str]]:
    """``{original file: whether it is a saved upload}`` of the workspace's documents,
    and the sources of those whose original is gone."""
    found: dict[str, bool] = {}
    missing: list[str] = []
    for row in await services.db.documents.list_documents(workspace_id):
        upload = row.get("upload_path")
        from_file = read_from_file(str(row["source"]), row.get("metadata"))
        path = upload or (str(row["source"]) if from_file else None)
        if path is not None and await asyncio.to_thread(Path(path).is_file):
            found[path] = bool(upload)
        elif path is not None or not str(row["source"]).startswith("upload:"):
            missing.append(str(row["source"]))
    return found, missing


async def reread_workspace(
    services: Services,
    workspace_id: str,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> RereadReport:
    """Read every document's original again with this version's readers, and store what
    changed (new text, new chunks, their vectors), so that a workspace gets a better
    reader without anything uploaded again. Originals are the kept uploads and the files
    documents were ingested from; a document whose original is gone (a .jsonl record
    ingested from a file since moved, say) is left as it is and named in the report.
    ``progress`` gets the files done so far and their number."""
    check_id(workspace_id)
    originals, missing = await _originals(services, workspace_id)
    report = RereadReport(missing=missing)
    for done, (original, uploaded) in enumerate(sorted(originals.items()), start=1):
        path = Path(original)
        read = _read_upload if uploaded else _read_file
        docs = await read(services, path)
        part = await ingest_documents(services, workspace_id, docs)
        report.ingest.merge(part)
        report.files += 1
        if progress is not None:
            progress(done, len(originals))
    return report


async def missing_files(services: Services, workspace_id: str) -> list[tuple[str, str]]:
    """``(document id, path)`` of the workspace's documents read from a file that no
    longer exists, by path. Only documents ingested from a file count: a .jsonl record
    is known by its ``_id``, not by its file, and an HTTP upload lives under the data
    directory."""
    missing: list[tuple[str, str]] = []
    for row in await services.db.documents.list_documents(workspace_id):
        if await file_gone(row):
            missing.append((str(row["id"]), str(row["source"])))
    return sorted(missing, key=lambda m: m[1])


async def prune_missing_files(
    services: Services,
    workspace_id: str,
    roots: Sequence[Path],
    missing: Sequence[tuple[str, str]],
) -> list[str]:
    """Delete those of the workspace's ``missing`` files (:func:`missing_files`) under one
    of ``roots`` (resolved directories); the paths of those deleted, sorted."""
    pruned: list[str] = []
    for document_id, source in missing:
        if any(root in Path(source).parents for root in roots) and await delete_document(
            services, workspace_id, document_id
        ):
            pruned.append(source)
    return pruned
