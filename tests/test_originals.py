"""Uploaded originals live in the shared database: a replica with a data directory of its
own, pointed at the same PostgreSQL and Milvus (``DATABASE_URL``, ``MILVUS_URI``), reads
again and resumes what another replica took, and a document's delete takes its original
with it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from convrag.config import Settings
from convrag.ingest import delete_document
from convrag.services import Services, open_services
from convrag.uploads import accept_upload, reread_workspace, resume_stopped_uploads
from tests.conftest import kept_originals

RULES = b"# Parking\n\nStaff park on level 2 of the west garage.\n\nVisitors park on level 1."


@pytest.fixture(scope="module")
async def replica(
    services: Services, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Services]:
    """A second replica: its own data directory, the session stack's PostgreSQL and
    Milvus Lite server, as a deployment's replicas share theirs."""
    assert services.settings.is_milvus_lite
    settings = Settings(
        data_dir=tmp_path_factory.mktemp("replica-b"),
        database_url=services.database_url,
        milvus_uri=services.milvus_uri,
        milvus_lite=True,
        ingest_embedding="thread",
    )
    async with open_services(settings) as other:
        yield other


async def _chunk_ids(services: Services, workspace: str, document_id: str) -> list[str]:
    async with services.db.pool.connection() as conn:
        rows = await (
            await conn.execute(
                "SELECT id::text AS id FROM chunks WHERE workspace_id = %s AND document_id = %s",
                (workspace, document_id),
            )
        ).fetchall()
    return sorted(r["id"] for r in rows)


async def test_a_document_uploaded_through_one_replica_is_reread_through_another(
    services: Services, replica: Services, workspace: str
) -> None:
    assert replica.settings.data_dir != services.settings.data_dir
    (doc_id,) = await accept_upload(services, workspace, "parking.md", RULES)
    await services.drain()
    before = await _chunk_ids(services, workspace, doc_id)
    assert before
    # Kept in the database alone: the other replica could not reach a file here.
    assert not list(services.settings.data_dir.rglob("parking.md"))
    async with services.db.pool.connection() as conn:  # as an older reader stored it
        await conn.execute("UPDATE documents SET content_hash = 'older' WHERE id = %s", (doc_id,))
    report = (await reread_workspace(replica, workspace)).as_json()
    assert (report["files"], report["updated"], report["missing"]) == (1, 1, [])
    chunks = await _chunk_ids(replica, workspace, doc_id)
    assert chunks == before  # each chunk once, in both stores
    assert sorted(replica.index.chunk_ids_of_document(workspace, doc_id)) == chunks
    hits = await replica.searcher.search(workspace, "where do staff park", top_k=1)
    assert "level 2 of the west garage" in hits[0].text


async def test_an_upload_stopped_on_one_replica_is_resumed_by_another_from_its_original(
    services: Services, replica: Services, workspace: str
) -> None:
    services.stopping.set()
    try:
        (doc_id,) = await accept_upload(services, workspace, "parking.md", RULES)
        await services.drain()
    finally:
        services.stopping.clear()
    assert await resume_stopped_uploads(replica) >= 1
    await replica.drain()
    row = await replica.db.documents.get_document(workspace, doc_id)
    assert row is not None and row["status"] == "ready" and row["n_chunks"] >= 1
    assert await kept_originals(replica, workspace) == [("parking.md", RULES)]
    assert not list(Path(replica.settings.data_dir).rglob("parking.md"))


async def test_deleting_the_last_document_of_an_upload_deletes_its_original_and_its_parts(
    services: Services, replica: Services, workspace: str
) -> None:
    records = b'{"_id": "r-1", "text": "Lockers open at eight."}\n{"_id": "r-2", "text": "Bikes."}'
    first, second = await accept_upload(services, workspace, "records.jsonl", records)
    await services.drain()
    row = await services.db.documents.get_document(workspace, first)
    assert row is not None
    assert await delete_document(replica, workspace, first)
    assert await kept_originals(services, workspace) == [("records.jsonl", records)]  # r-2's
    assert await delete_document(replica, workspace, second)
    assert await kept_originals(services, workspace) == []
    async with services.db.pool.connection() as conn:
        parts = await (
            await conn.execute(
                "SELECT count(*) AS n FROM original_parts WHERE original_id = %s",
                (row["upload_path"],),
            )
        ).fetchone()
    assert parts is not None and parts["n"] == 0
