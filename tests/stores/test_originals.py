"""The originals' store (``stores.originals``) on both PostgreSQLs: a file kept in parts
reads back byte for byte, a start moves an older version's kept files in (once), and
originals no document names are deleted."""

from __future__ import annotations

import os
import uuid
from datetime import timedelta
from pathlib import Path

from convrag.stores.database import Database
from convrag.stores.originals import PART_BYTES


async def _parts(db: Database, key: str) -> int:
    async with db.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM original_parts WHERE original_id = %s", (key,)
            )
        ).fetchone()
    assert row is not None
    return int(row["n"])


async def test_a_file_larger_than_a_part_is_kept_in_parts_and_reads_back_whole(
    db: Database, workspace: str, tmp_path: Path
) -> None:
    data = os.urandom(2 * PART_BYTES + 123)
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "scan.pdf"
    path.write_bytes(data)
    key = await db.originals.save(workspace, path)
    assert await _parts(db, key) == 3
    assert await db.originals.keys(workspace) == {key}
    assert await db.originals.keys("another-workspace") == set()
    loaded = await db.originals.load(workspace, key, tmp_path)
    assert loaded == tmp_path / "scan.pdf" and loaded.read_bytes() == data
    assert await db.originals.load("another-workspace", key, tmp_path) is None
    assert await db.originals.delete(workspace, key)
    assert await _parts(db, key) == 0
    assert await db.originals.load(workspace, key, tmp_path) is None


async def test_a_start_moves_the_files_an_older_version_kept_into_the_store_once(
    db: Database, workspace: str, tmp_path: Path
) -> None:
    uploads = tmp_path / "uploads"
    kept = uploads / workspace / uuid.uuid4().hex / "rules.txt"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"Staff park on level 2.")
    elsewhere = tmp_path / "other-replica" / "uploads" / "notes.md"  # not this directory's
    for doc, name, path in (
        (uuid.uuid4(), "rules.txt", kept),
        (uuid.uuid4(), "notes.md", elsewhere),
    ):
        await db.documents.upsert_document_status(
            workspace, str(doc), f"upload:{name}", status="ready", upload_path=str(path)
        )
    assert await db.originals.adopt_files(uploads) == 1
    assert not kept.exists() and not kept.parent.exists()
    rows = {r["source"]: r["upload_path"] for r in await db.documents.list_documents(workspace)}
    assert rows["upload:notes.md"] == str(elsewhere)  # left for its own replica
    key = rows["upload:rules.txt"]
    loaded = await db.originals.load(workspace, key, tmp_path)
    assert loaded is not None and loaded.read_bytes() == b"Staff park on level 2."
    assert await db.originals.adopt_files(uploads) == 0  # again: nothing moves twice
    assert await db.originals.keys(workspace) == {key}


async def test_originals_no_document_names_are_deleted_once_old_and_in_use_ones_never(
    db: Database, workspace: str, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_bytes(b"A.")
    orphan, used, fresh = [await db.originals.save(workspace, tmp_path / "a.txt") for _ in "abc"]
    await db.documents.upsert_document_status(
        workspace, str(uuid.uuid4()), "upload:a.txt", status="ready", upload_path=used
    )
    assert not await db.originals.delete(workspace, used, unless_used=True)
    async with db.pool.connection() as conn:
        await conn.execute(
            "UPDATE originals SET created_at = now() - interval '2 hours' WHERE id = ANY(%s)",
            ([orphan, used],),
        )
    await db.originals.prune_unused(timedelta(hours=1))
    assert await db.originals.keys(workspace) == {used, fresh}
