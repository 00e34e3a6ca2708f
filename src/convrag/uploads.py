"""The files behind a workspace's documents: uploads kept as their originals in the
shared store and ingested in the background (:func:`accept_upload`), resumed after a
shutdown, read again with a newer reader (:func:`reread_workspace`), deleted with their
document, and files gone from disk (:func:`missing_files`). The writing itself is
:mod:`convrag.ingest`'s; the originals' store is :mod:`convrag.stores.originals`.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
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
    forget_original,
    ingest_documents,
    read_from_file,
)
from convrag.stores.base import RESUME_LOCK
from convrag.stores.originals import is_original_key

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from convrag.services import Services


async def accept_upload(
    services: Services, workspace_id: str, filename: str, data: bytes
) -> list[str]:
    """Keep an uploaded file as its documents' original and ingest it in the background;
    returns the ids of the documents it holds, in file order (a ``.jsonl`` file holds one
    per record).

    The file is read before this returns, so a bad one raises :class:`IngestError`
    (naming ``filename``, not the temporary copy it was read from) and nothing is kept or
    recorded. Its documents are recorded as ``processing`` first, then ``ready`` by the
    ingest or ``failed`` with the error, which the caller polls for.

    The original is kept in the shared store (:mod:`convrag.stores.originals`), so that
    any process on the database reads it again: a shutdown's stopped ingest resumes from
    it, and :func:`reread_workspace` reads it with a newer reader. It goes with the last
    document read from it, when a later upload of the same name replaces it, or when
    the ingest fails.
    """
    with tempfile.TemporaryDirectory(prefix="convrag-upload-") as tmp:
        path = Path(tmp) / filename
        await asyncio.to_thread(path.write_bytes, data)
        try:
            docs = await _read_upload(services, path)
        except IngestError as exc:
            raise IngestError(str(exc).replace(str(path), filename)) from exc
        key = await services.db.originals.save(workspace_id, path)
    try:
        return await _ingest_upload(services, workspace_id, docs, key, filename)
    except BaseException:
        await asyncio.shield(services.db.originals.delete(workspace_id, key))
        raise


@asynccontextmanager
async def _original_copy(
    services: Services, workspace_id: str, upload_path: str | None
) -> AsyncIterator[Path | None]:
    """A file to read an upload's original from while the block runs: a temporary copy
    of the stored original (removed after), or the file itself where an older version
    kept it in a data directory; None when it is gone."""
    if upload_path is None:
        yield None
    elif not is_original_key(upload_path):
        path = Path(upload_path)
        yield path if await asyncio.to_thread(path.is_file) else None
    else:
        with tempfile.TemporaryDirectory(prefix="convrag-original-") as tmp:
            yield await services.db.originals.load(workspace_id, upload_path, Path(tmp))


async def resume_stopped_uploads(services: Services) -> int:
    """At start: ingest again, from their originals, the uploads a shutdown stopped
    (whichever process took them). An upload whose original is gone or no longer reads
    is marked failed. Returns how many were taken up.

    One process at a time (``serve --workers N`` starts N at once): taking one up records
    its documents ``processing`` again, no longer stopped, so the next process finds it
    taken up instead of ingesting it a second time beside the first."""
    resumed = 0
    async with services.db.exclusive(RESUME_LOCK):
        for workspace_id, upload_path in await services.db.documents.stopped_uploads():
            try:
                async with _original_copy(services, workspace_id, upload_path) as path:
                    if path is None or upload_path is None:
                        raise IngestError("the saved file is gone")
                    docs = await _read_upload(services, path)
                await _ingest_upload(services, workspace_id, docs, upload_path, path.name)
                resumed += 1
            except IngestError:
                await services.db.documents.fail_stopped_uploads(workspace_id, upload_path)
                if upload_path is not None:
                    await forget_original(services, workspace_id, upload_path, unless_used=False)
    if resumed:
        log.info("resumed %d uploads a shutdown had stopped", resumed)
    return resumed


def is_jsonl(name: str) -> bool:
    """Whether a file of this name is a JSONL corpus (one document per record)."""
    return name.lower().endswith((".jsonl", ".jsonl.gz"))


async def _ingest_upload(
    services: Services,
    workspace_id: str,
    docs: list[SourceDocument],
    original: str,
    filename: str,
) -> list[str]:
    """Record the documents read from an upload ``processing``, naming their ``original``
    (its ``upload_path``), and ingest them in the background; the original stays theirs,
    unless the ingest fails (see :func:`accept_upload`)."""
    ids = list(dict.fromkeys(document_id_for(workspace_id, d.source) for d in docs))
    replaced = {
        str(row["upload_path"])
        for row in await services.db.documents.get_documents(workspace_id, ids)
        if row.get("upload_path") and row["upload_path"] != original
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
                upload_path=original,
            )

    await mark("processing")

    async def progress(document_id: str, done: int, total: int) -> None:
        await services.db.documents.set_document_progress(workspace_id, document_id, done, total)

    async def run() -> None:
        try:
            await ingest_documents(services, workspace_id, docs, chunk_progress=progress)
        except IngestStopped:  # the next start takes it up again, from the original
            await services.db.documents.mark_stopped(workspace_id, ids)
            return
        except asyncio.CancelledError:  # a shutdown that did not wait for the batch
            await asyncio.shield(services.db.documents.mark_stopped(workspace_id, ids))
            raise
        except Exception as exc:  # recorded on the document, readable by the client
            await mark("failed", error=failure_reason(exc))
            await forget_original(services, workspace_id, original, unless_used=False)
            return
        for old in replaced:  # an upload of the same name replaced this original
            await forget_original(services, workspace_id, old)

    services.spawn(run(), ingest_of=filename)
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
    """``{original: whether it is an upload's}`` of the workspace's documents (an upload's
    ``upload_path``, else the path of the file a document was read from), and the
    sources of those whose original is gone."""
    found: dict[str, bool] = {}
    missing: list[str] = []
    kept = await services.db.originals.keys(workspace_id)
    for row in await services.db.documents.list_documents(workspace_id):
        upload = row.get("upload_path")
        from_file = read_from_file(str(row["source"]), row.get("metadata"))
        path = upload or (str(row["source"]) if from_file else None)
        if path is not None and (
            path in kept if is_original_key(path) else await asyncio.to_thread(Path(path).is_file)
        ):
            found[path] = bool(upload)
        elif path is not None or not str(row["source"]).startswith("upload:"):
            missing.append(str(row["source"]))
    return found, missing


async def _read_original(
    services: Services, workspace_id: str, original: str, uploaded: bool
) -> list[SourceDocument]:
    """The documents of one of :func:`_originals`' originals, read again."""
    if not uploaded:
        return await _read_file(services, Path(original))
    async with _original_copy(services, workspace_id, original) as path:
        if path is None:
            raise IngestError(f"the original of {original} is gone")
        return await _read_upload(services, path)


async def reread_workspace(
    services: Services,
    workspace_id: str,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> RereadReport:
    """Read every document's original again with this version's readers, and store what
    changed (new text, new chunks, their vectors), so that a workspace gets a better
    reader without anything uploaded again. Originals are the kept uploads (in the shared
    store, so any process on the database reads them) and the files documents were
    ingested from (on this machine); a document whose original is gone (a .jsonl record
    ingested from a file since moved, say) is left as it is and named in the report.
    ``progress`` gets the files done so far and their number."""
    check_id(workspace_id)
    originals, missing = await _originals(services, workspace_id)
    report = RereadReport(missing=missing)
    for done, (original, uploaded) in enumerate(sorted(originals.items()), start=1):
        docs = await _read_original(services, workspace_id, original, uploaded)
        part = await ingest_documents(services, workspace_id, docs)
        report.ingest.merge(part)
        report.files += 1
        if progress is not None:
            progress(done, len(originals))
    return report


async def missing_files(services: Services, workspace_id: str) -> list[tuple[str, str]]:
    """``(document id, path)`` of the workspace's documents read from a file that no
    longer exists, by path. Only documents ingested from a file count: a .jsonl record
    is known by its ``_id``, not by its file, and an HTTP upload's original is kept in the
    database."""
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
