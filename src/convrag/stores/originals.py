"""Uploaded files kept as their documents' originals, in PostgreSQL: every process sharing
the database reads them (a ``reindex --reread`` or the resume of a stopped upload runs on
whichever replica starts it, not only on the one that took the upload).

An original is a row of ``originals`` and its bytes, cut into parts of
:data:`PART_BYTES` in ``original_parts``; a document names its original by the row's id
in ``documents.upload_path``. Parts are written and read one at a time, so that neither
direction holds a large file twice, and an original is written in one transaction, so
that a failed write leaves nothing. Plain rows, not large objects: a workspace's delete
takes its originals with it (the foreign keys cascade), where large objects would be
left behind unless something unlinked each one.

Files an older version kept in a data directory (``uploads/``, named in ``upload_path``
by their absolute path) are moved in by :meth:`OriginalStore.adopt_files` at a start.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from datetime import timedelta
from pathlib import Path
from typing import BinaryIO

from psycopg import AsyncConnection
from psycopg.rows import DictRow

from convrag.ids import is_uuid
from convrag.stores.base import PooledStore, fetch_one

PART_BYTES = 1024 * 1024
"""The size of an original's parts: the most of a file that a write or a read holds at
once beside what the caller holds."""

UNUSED_AFTER = timedelta(hours=1)
"""How old an original that no document names must be before a start deletes it (one
left by a process that died between keeping it and recording its documents, or replaced
while its ingest was under way); a fresh upload names its original within milliseconds."""


def is_original_key(upload_path: str) -> bool:
    """Whether a document's ``upload_path`` names an original in the store (a UUID), not a
    file an older version kept in its data directory."""
    return is_uuid(upload_path)


class OriginalStore(PooledStore):
    """The workspace's kept uploads (see the module docstring)."""

    async def save(self, workspace_id: str, path: Path) -> str:
        """Keep the file at ``path`` (its name is the original's) as an original of the
        workspace; its key, for ``documents.upload_path``."""
        await self.ensure_workspace(workspace_id)
        async with self.pool.connection() as conn, conn.transaction():
            return await _write(conn, workspace_id, path)

    async def load(self, workspace_id: str, key: str, into: Path) -> Path | None:
        """Write original ``key`` into the directory ``into``, under its file name, a part
        at a time; the file's path, or None when there is no such original."""
        if not is_original_key(key):
            return None
        async with self.pool.connection() as conn:
            row = await fetch_one(
                conn,
                "SELECT filename FROM originals WHERE workspace_id = %s AND id = %s",
                (workspace_id, key),
            )
            if row is None:
                return None
            path = into / Path(row["filename"]).name
            with path.open("wb") as out:
                parts = conn.cursor().stream(
                    "SELECT data FROM original_parts WHERE original_id = %s ORDER BY seq", (key,)
                )
                async for part in parts:
                    await asyncio.to_thread(out.write, part["data"])
        return path

    async def keys(self, workspace_id: str) -> set[str]:
        """The keys of the workspace's originals."""
        rows = await self.fetch_all(
            "SELECT id::text AS id FROM originals WHERE workspace_id = %s", (workspace_id,)
        )
        return {r["id"] for r in rows}

    async def delete(self, workspace_id: str, key: str, *, unless_used: bool = False) -> bool:
        """Delete original ``key`` (its parts go with it); with ``unless_used``, only if no
        document of the workspace names it any more. Whether it was deleted."""
        if not is_original_key(key):
            return False
        unused = (
            " AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.workspace_id = %s"
            " AND d.upload_path = %s)"
        )
        query = "DELETE FROM originals WHERE workspace_id = %s AND id = %s"
        params: tuple[str, ...] = (workspace_id, key)
        if unless_used:
            query, params = query + unused, (*params, workspace_id, key)
        return await self.execute(query, params) > 0

    async def prune_unused(self, older_than: timedelta = UNUSED_AFTER) -> int:
        """Delete the originals older than ``older_than`` that no document names; how
        many (see :data:`UNUSED_AFTER`)."""
        return await self.execute(
            """DELETE FROM originals o WHERE o.created_at < now() - %s
                 AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.workspace_id = o.workspace_id
                                   AND d.upload_path = o.id::text)""",
            (older_than,),
        )

    async def adopt_files(self, uploads: Path) -> int:
        """Move into the store the uploads an older version kept under ``uploads`` (a data
        directory's ``uploads/``) that documents still name by path: each file's original
        is written and its documents made to name it in one transaction, then the file is
        removed. Files elsewhere (another replica's data directory) or gone are left as
        they are. Safe to run again (what was moved is no longer named by path); returns
        how many files were moved."""
        root = uploads.resolve()
        rows = await self.fetch_all(
            """SELECT DISTINCT workspace_id, upload_path FROM documents
               WHERE upload_path LIKE '/%%' ORDER BY workspace_id, upload_path""",
            (),
        )
        moved = 0
        for row in rows:
            path = Path(row["upload_path"])
            if root not in path.resolve().parents or not await asyncio.to_thread(path.is_file):
                continue
            async with self.pool.connection() as conn, conn.transaction():
                key = await _write(conn, row["workspace_id"], path)
                await conn.execute(
                    "UPDATE documents SET upload_path = %s WHERE workspace_id = %s "
                    "AND upload_path = %s",
                    (key, row["workspace_id"], row["upload_path"]),
                )
            await asyncio.to_thread(_remove_kept_file, path)
            moved += 1
        return moved


async def _write(conn: AsyncConnection[DictRow], workspace_id: str, path: Path) -> str:
    """Write the file at ``path`` as a new original on ``conn`` (in the caller's
    transaction), a part at a time; its key."""
    key = str(uuid.uuid4())
    size = (await asyncio.to_thread(path.stat)).st_size
    await conn.execute(
        "INSERT INTO originals (id, workspace_id, filename, size) VALUES (%s, %s, %s, %s)",
        (key, workspace_id, path.name, size),
    )
    with path.open("rb") as fh:
        seq = 0
        while part := await asyncio.to_thread(_read_part, fh):
            await conn.execute(
                "INSERT INTO original_parts (original_id, seq, data) VALUES (%s, %s, %s)",
                (key, seq, part),
            )
            seq += 1
    return key


def _read_part(fh: BinaryIO) -> bytes:
    return fh.read(PART_BYTES)


def _remove_kept_file(path: Path) -> None:
    """Remove a file moved into the store and its per-upload directory (when empty)."""
    path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        path.parent.rmdir()
