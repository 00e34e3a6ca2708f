"""Ingestion against the real embedded Postgres and Milvus Lite."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from convrag.assistant import open_assistant
from convrag.documents.base import SourceDocument
from convrag.documents.chunking import Chunker
from convrag.documents.load import load_path
from convrag.embeddings import EmbeddingMismatch, Matrix
from convrag.ingest import (
    DocumentBusy,
    IngestStopped,
    delete_document,
    embedding_input,
    ingest_documents,
    reindex_workspace,
)
from convrag.retrieval.search import HybridSearcher
from convrag.services import Services
from convrag.stores.base import INTERRUPTED_AFTER
from convrag.stores.documents import STOPPED_DOCUMENT, ingest_pace
from convrag.uploads import accept_upload, reread_workspace, resume_stopped_uploads
from tests.conftest import kept_originals
from tests.documents.samples import pdf_bytes, write

EMPLOYEE = (
    "Prasad Chaudhari\nPosition: Software Engineer\nTotal Salary: $120,000\n"
    "Basic Salary: $80,000\nAllowances: $40,000\n"
)
LEAVE = "Leave policy: every employee gets 25 days of annual leave and unlimited sick leave."
GARDEN = "Tomatoes need six hours of direct sunlight and deep watering twice a week."


async def _ingest(services: Services, workspace: str, *paths: Path) -> dict[str, int]:
    docs = [d for p in paths for d in load_path(p, max_bytes=services.settings.max_file_bytes)]
    report = await ingest_documents(services, workspace, docs)
    return report.as_json()


@pytest.fixture
async def corpus(services: Services, workspace: str, docs_dir: Path) -> list[Path]:
    paths = [
        write(docs_dir, "employee.txt", EMPLOYEE),
        write(docs_dir, "leave.md", LEAVE),
        write(docs_dir, "garden.html", f"<html><title>Garden</title><p>{GARDEN}</p></html>"),
    ]
    await _ingest(services, workspace, *paths)
    return paths


ENGINES = ["in-process", "milvus"]


def _searcher(services: Services, engines: str) -> HybridSearcher:
    """The service's searcher, or one on Milvus's own dense index and BM25 function (what
    a Milvus server uses) over the same stores."""
    if engines == "in-process":
        return services.searcher
    return HybridSearcher(
        services.db,
        services.index,
        services.embedder,
        keyword_engine="milvus",
        dense_engine="milvus",
        policy=services.policy,
    )


@pytest.mark.parametrize("engines", ENGINES)
@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
async def test_search_finds_the_right_chunk_in_every_mode(
    services: Services, workspace: str, corpus: list[Path], mode: str, engines: str
) -> None:
    results = await _searcher(services, engines).search(
        workspace,
        "how many days of annual leave",
        top_k=3,
        mode=mode,  # type: ignore[arg-type]
    )
    assert results and "25 days" in results[0].text


async def test_hybrid_results_carry_both_list_scores(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    top = (await services.searcher.search(workspace, "Prasad basic salary", top_k=1))[0]
    assert "Basic Salary" in top.text
    assert top.dense_score is not None and top.bm25_score is not None
    assert top.score == pytest.approx(1.0)  # first in both lists


@pytest.mark.parametrize("engines", ENGINES)
@pytest.mark.parametrize("mode", ["dense", "bm25", "hybrid"])
async def test_a_workspace_never_sees_another_workspaces_chunks(
    services: Services, workspace: str, corpus: list[Path], mode: str, engines: str
) -> None:
    other = workspace + "-other"
    await services.db.workspaces.ensure_workspace(other)
    results = await _searcher(services, engines).search(other, "annual leave", top_k=5, mode=mode)  # type: ignore[arg-type]
    assert results == []


async def test_reingesting_an_unchanged_file_changes_nothing(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    before = await services.db.documents.chunk_texts(workspace)
    version = await services.db.workspaces.index_version(workspace)
    report = await _ingest(services, workspace, *corpus)
    assert report == {"added": 0, "updated": 0, "unchanged": 3, "moved": 0, "chunks_written": 0}
    assert await services.db.documents.chunk_texts(workspace) == before
    assert await services.db.workspaces.index_version(workspace) == version


async def test_a_moved_folder_replaces_its_documents_instead_of_adding_copies(
    services: Services, workspace: str, corpus: list[Path], tmp_path: Path
) -> None:
    """A document is known by its path: a checkout moved with its data directory
    ingested its files again beside the old ones, and every answer cited both."""
    moved_dir = tmp_path / "moved"
    corpus[0].parent.rename(moved_dir)
    report = await _ingest(services, workspace, *(moved_dir / p.name for p in corpus))
    assert (report["moved"], report["added"]) == (3, 0)
    documents = await services.db.documents.list_documents(workspace)
    assert sorted(str(d["source"]) for d in documents) == sorted(
        str(moved_dir / p.name) for p in corpus
    )
    for engines in ENGINES:
        hits = await _searcher(services, engines).search(workspace, "annual leave", top_k=10)
        assert hits and {h.document_id for h in hits} <= {str(d["id"]) for d in documents}


async def test_a_copied_file_is_added_beside_the_original(
    services: Services, workspace: str, corpus: list[Path], tmp_path: Path
) -> None:
    copy = tmp_path / "copy.md"
    copy.write_bytes(corpus[1].read_bytes())
    report = await _ingest(services, workspace, copy)
    assert (report["moved"], report["added"]) == (0, 1)
    assert len(await services.db.documents.list_documents(workspace)) == 4


async def test_a_changed_file_replaces_its_chunks_in_both_stores(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    corpus[1].write_text("Leave policy: every employee now gets 30 days of paid vacation.")
    report = await _ingest(services, workspace, corpus[1])
    assert report["updated"] == 1
    texts = [t for _, _, t in await services.db.documents.chunk_texts(workspace)]
    assert not any("25 days" in t for t in texts) and any("30 days" in t for t in texts)
    for engines in ENGINES:
        dense = await _searcher(services, engines).search(
            workspace, "annual leave days", top_k=5, mode="dense"
        )
        assert not any("25 days" in r.text for r in dense)
    assert services.index.count(workspace) == 3


async def test_deleting_a_document_leaves_no_chunk_anywhere(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    doc = await services.db.documents.get_document_by_source(workspace, str(corpus[0].resolve()))
    assert doc is not None
    assert await delete_document(services, workspace, str(doc["id"]))
    services.index.flush()
    assert services.index.chunk_ids_of_document(workspace, str(doc["id"])) == []
    assert all(
        d != str(doc["id"]) for _, d, _ in await services.db.documents.chunk_texts(workspace)
    )
    for mode in ("dense", "bm25", "hybrid"):
        hits = await services.searcher.search(workspace, "Prasad salary", top_k=5, mode=mode)  # type: ignore[arg-type]
        assert all(h.document_id != str(doc["id"]) for h in hits)


async def test_deleting_from_another_workspace_finds_nothing(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    doc = await services.db.documents.get_document_by_source(workspace, str(corpus[0].resolve()))
    assert doc is not None
    assert not await delete_document(services, workspace + "-other", str(doc["id"]))
    assert services.index.chunk_ids_of_document(workspace, str(doc["id"]))


async def test_invalid_workspace_ids_are_refused(services: Services) -> None:
    with pytest.raises(ValueError, match="invalid workspace id"):
        await services.searcher.search('x" or workspace_id != "', "q")


async def test_dense_search_reloads_vectors_from_milvus_when_postgres_has_none(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    """Chunks written without a stored vector (e.g. by a process on DENSE_ENGINE=milvus)."""
    async with services.db.pool.connection() as conn:
        await conn.execute(
            "UPDATE chunks SET embedding = NULL WHERE workspace_id = %s", (workspace,)
        )
        await conn.execute(
            "UPDATE workspaces SET index_version = index_version + 1 WHERE id = %s", (workspace,)
        )
    results = await services.searcher.search(workspace, "annual leave days", top_k=2, mode="dense")
    assert results and "25 days" in results[0].text


async def test_pdf_chunks_never_span_pages_and_store_their_page(
    services: Services, workspace: str, docs_dir: Path
) -> None:
    long_page = [f"Rule {i} of the travel policy applies to every trip abroad." for i in range(40)]
    path = docs_dir / "travel.pdf"
    path.write_bytes(pdf_bytes([["Short first page."], long_page, ["Hotels cost at most 200."]]))
    doc = load_path(path, max_bytes=10**6)[0]
    chunks = Chunker(800, 100).chunks(doc)
    assert chunks[0].page == 1 and chunks[-1].page == 3
    assert {c.page for c in chunks} == {1, 2, 3} and len(chunks) > 3
    for c in chunks:
        assert c.text in doc.pages[c.page - 1]  # type: ignore[operator]
    await ingest_documents(services, workspace, [doc])
    ids = [cid for cid, _, _ in await services.db.documents.chunk_texts(workspace)]
    rows = {r.text: r.page for r in await services.db.documents.get_chunks(workspace, ids)}
    assert rows["Short first page."] == 1 and rows["Hotels cost at most 200."] == 3
    assert sorted(rows.values()).count(2) == len(chunks) - 2


async def test_chunks_of_other_formats_have_no_page(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    ids = [cid for cid, _, _ in await services.db.documents.chunk_texts(workspace)]
    assert [r.page for r in await services.db.documents.get_chunks(workspace, ids)] == [None] * 3


async def test_a_large_document_reports_its_chunks_as_they_are_embedded(
    services: Services, workspace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services.settings, "ingest_slice_chunks", 4)
    doc = tmp_path / "long.md"
    doc.write_text(
        "\n\n".join(f"Paragraph {i}. " + "Leave accrues every month. " * 20 for i in range(12))
    )
    seen: list[tuple[int, int]] = []

    async def record(document_id: str, done: int, total: int) -> None:
        seen.append((done, total))

    report = await ingest_documents(
        services, workspace, load_path(doc, max_bytes=10**6), chunk_progress=record
    )
    total = report.chunks_written
    assert total > 8
    assert seen[0] == (0, total) and seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and len(seen) > 3


async def test_a_processing_document_shows_its_progress_until_it_is_ready(
    services: Services, workspace: str
) -> None:
    from convrag.ids import document_id_for

    doc_id = document_id_for(workspace, "upload:big.md")
    await services.db.documents.upsert_document_status(
        workspace, doc_id, "upload:big.md", status="processing"
    )
    await services.db.documents.set_document_progress(workspace, doc_id, 40, 130)
    first = await services.db.documents.get_document(workspace, doc_id)
    await services.db.documents.set_document_progress(workspace, doc_id, 60, 130)
    row = await services.db.documents.get_document(workspace, doc_id)
    assert first is not None and row is not None
    assert (row["n_chunks"], row["chunks_total"]) == (60, 130)
    # The clock starts at the first report, with the chunks a resumed ingest had then.
    assert row["progress_started_at"] == first["progress_started_at"] is not None
    assert row["progress_started_chunks"] == 40
    assert row["progress_at"] >= first["progress_at"]
    await services.db.documents.upsert_document_status(
        workspace, doc_id, "upload:big.md", status="processing"
    )
    again = await services.db.documents.get_document(workspace, doc_id)
    assert again is not None and again["progress_started_at"] is None  # a new ingest


async def test_an_uploads_chunks_move_in_its_row_slice_by_slice_and_its_pace_is_kept(
    services: Services, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services.settings, "ingest_slice_chunks", 4)
    stored = services.db.documents.set_document_progress
    seen: list[tuple[int, int]] = []

    async def progress(workspace_id: str, document_id: str, done: int, total: int) -> None:
        await stored(workspace_id, document_id, done, total)
        row = await services.db.documents.get_document(workspace_id, document_id)
        assert row is not None
        seen.append((row["n_chunks"], row["chunks_total"]))

    monkeypatch.setattr(services.db.documents, "set_document_progress", progress)
    (doc_id,) = await accept_upload(services, workspace, "rules.txt", _long_text(300).encode())
    await services.drain()
    row = await services.db.documents.get_document(workspace, doc_id)
    assert row is not None and row["status"] == "ready"
    total = row["n_chunks"]
    assert total > 8 and seen[0] == (0, total) and seen[-1] == (total, total)
    assert len(seen) >= total // 4  # a report per slice, the row moving each time
    assert row["progress_started_at"] is not None and row["progress_at"] is not None
    pace = ingest_pace(row, datetime.now(UTC))
    assert pace.chunks_per_s is not None and pace.chunks_per_s > 0 and pace.eta_s == 0.0


async def _record_model(services: Services, workspace: str, model: str) -> None:
    async with services.db.pool.connection() as conn:
        await conn.execute(
            "UPDATE workspaces SET embedding_model = %s WHERE id = %s", (model, workspace)
        )


async def test_ingest_records_the_embedding_model_of_the_workspace(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    _, model = await services.db.workspaces.index_state(workspace)
    assert model == services.embedder.name


async def test_a_workspace_indexed_with_another_model_refuses_ingest_and_search_naming_the_fix(
    services: Services, workspace: str, corpus: list[Path], docs_dir: Path
) -> None:
    await _record_model(services, workspace, "local:some-other-model")
    more = write(docs_dir, "more.txt", "Parking: staff park on level 2.")
    with pytest.raises(EmbeddingMismatch, match=rf"convrag reindex -w {workspace}"):
        await _ingest(services, workspace, more)
    with pytest.raises(EmbeddingMismatch, match="local:some-other-model"):
        await services.searcher.search(workspace, "annual leave", top_k=1)
    # A question fails the same way: answering "not found" would blame the documents.
    async with open_assistant(services.settings, services=services) as bot:
        conversation = await bot.new_conversation(workspace)
        with pytest.raises(EmbeddingMismatch, match="convrag reindex"):
            await bot.ask("How many days of annual leave?", conversation, workspace_id=workspace)


async def test_reindex_embeds_every_chunk_again_and_records_the_services_model(
    services: Services, workspace: str, corpus: list[Path]
) -> None:
    version, _ = await services.db.workspaces.index_state(workspace)
    async with services.db.pool.connection() as conn:
        await conn.execute(  # vectors of "another model": nothing like the real ones
            "UPDATE chunks SET embedding = %s WHERE workspace_id = %s",
            (np.zeros(services.embedder.dim, np.float32).tobytes(), workspace),
        )
    await _record_model(services, workspace, "local:some-other-model")
    done: list[tuple[int, int]] = []
    n = await reindex_workspace(services, workspace, progress=lambda d, t: done.append((d, t)))
    chunks = await services.db.workspaces.reindexable_chunks(workspace)
    assert n == len(chunks) and done[-1] == (n, n)
    new_version, model = await services.db.workspaces.index_state(workspace)
    assert model == services.embedder.name and new_version > version
    hits = await services.searcher.search(workspace, "how many days of annual leave", top_k=1)
    assert "25 days" in hits[0].text and (hits[0].dense_score or 0.0) > 0.3


def _long_text(sentences: int) -> str:
    return " ".join(
        f"Rule {i}: staff on shift {i} park on level {i % 7} of garage {i % 3}."
        for i in range(sentences)
    )


async def test_an_upload_a_shutdown_stops_is_flagged_and_resumed_at_the_next_start(
    services: Services, workspace: str
) -> None:
    services.stopping.set()
    try:
        (doc_id,) = await accept_upload(services, workspace, "rules.txt", b"Staff park on level 2.")
        await services.drain()
        row = await services.db.documents.get_document(workspace, doc_id)
        assert row is not None and row["status"] == "processing"
        assert row["error"] == STOPPED_DOCUMENT
        kept = [("rules.txt", b"Staff park on level 2.")]
        assert await kept_originals(services, workspace) == kept  # kept to resume from
    finally:
        services.stopping.clear()
    assert await resume_stopped_uploads(services) >= 1
    await services.drain()
    row = await services.db.documents.get_document(workspace, doc_id)
    assert row is not None and row["status"] == "ready" and row["n_chunks"] == 1
    assert all(ws != workspace for ws, _ in await services.db.documents.stopped_uploads())
    assert await kept_originals(services, workspace) == kept  # ingested: its original


async def test_processes_starting_together_resume_each_stopped_upload_once(
    services: Services, workspace: str
) -> None:
    """``serve --workers N`` starts N processes at once, and each resumes the uploads a
    shutdown stopped: one at a time, so the others find them taken up, not ingest them
    again beside it."""
    services.stopping.set()
    try:
        await accept_upload(services, workspace, "rules.txt", b"Staff park on level 2.")
        await services.drain()
    finally:
        services.stopping.clear()
    stopped = len(await services.db.documents.stopped_uploads())
    assert stopped >= 1
    resumed = await asyncio.gather(*(resume_stopped_uploads(services) for _ in range(2)))
    await services.drain()
    assert sum(resumed) == stopped


async def test_a_shutdown_names_the_ingest_it_waits_for_and_stops_one_that_overruns_to_resume(
    services: Services,
    workspace: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The child's batch outlasts the shutdown's wait: the log says what the shutdown
    waits for and that it stopped it, and the upload resumes at the next start."""
    import convrag.services

    embed = services.bulk.embed
    embedding = asyncio.Event()

    async def slow_batch(texts: Sequence[str]) -> Matrix:
        embedding.set()
        await asyncio.sleep(10)  # far past the wait below
        return await embed(texts)

    monkeypatch.setattr(services.bulk, "embed", slow_batch)
    monkeypatch.setattr(convrag.services, "STOP_WAIT_S", 0.2)
    (doc_id,) = await accept_upload(services, workspace, "rules.txt", b"Staff park on level 2.")
    await embedding.wait()
    try:
        with caplog.at_level(logging.INFO, logger="convrag.services"):
            await services.stop()
    finally:
        services.stopping.clear()
    assert [r.getMessage() for r in caplog.records if r.name == "convrag.services"] == [
        "shutting down: waiting for the ingest of rules.txt to finish its batch (up to 0.2 s; "
        "it resumes at the next start)",
        "shutting down: the ingest of rules.txt did not finish its batch in 0.2 s; stopped "
        "in the middle of it (the ingest process completes the batch in hand before it exits)",
    ]
    row = await services.db.documents.get_document(workspace, doc_id)
    assert row is not None and row["status"] == "processing"
    assert row["error"] == STOPPED_DOCUMENT
    monkeypatch.undo()
    assert await resume_stopped_uploads(services) >= 1
    await services.drain()
    row = await services.db.documents.get_document(workspace, doc_id)
    assert row is not None and row["status"] == "ready" and row["n_chunks"] == 1


async def test_a_stopping_service_ends_an_ingest_at_a_slice_boundary_with_nothing_half_written(
    services: Services, workspace: str
) -> None:
    docs = [SourceDocument("long.txt", "Long", _long_text(1500), {})]
    slices: list[int] = []

    async def progress(_: str, done: int, total: int) -> None:
        slices.append(done)
        if done > 0:  # the first slice is embedded: the service starts shutting down
            services.stopping.set()

    try:
        with pytest.raises(IngestStopped):
            await ingest_documents(services, workspace, docs, chunk_progress=progress)
    finally:
        services.stopping.clear()
    assert slices[-1] == services.settings.ingest_slice_chunks  # one slice, then it stopped
    assert await services.db.documents.chunk_texts(workspace) == []


async def test_a_stopped_upload_whose_file_is_gone_is_marked_failed(
    services: Services, workspace: str
) -> None:
    services.stopping.set()
    try:
        (doc_id,) = await accept_upload(services, workspace, "gone.txt", b"Gone soon.")
        await services.drain()
    finally:
        services.stopping.clear()
    for ws, key in await services.db.documents.stopped_uploads():
        if ws == workspace and key:
            assert await services.db.originals.delete(ws, key)
    await resume_stopped_uploads(services)
    row = await services.db.documents.get_document(workspace, doc_id)
    assert row is not None and row["status"] == "failed" and "upload" in row["error"]


async def test_a_processing_document_is_deleted_only_once_no_live_ingest_could_hold_it(
    services: Services, workspace: str
) -> None:
    """A live ingest would store the document again; a row that has not moved for
    ``INTERRUPTED_AFTER`` is a dead process's leftover, which must stay deletable."""
    from convrag.ids import document_id_for

    doc_id = document_id_for(workspace, "upload:left.md")
    await services.db.documents.upsert_document_status(
        workspace, doc_id, "upload:left.md", status="processing"
    )
    with pytest.raises(DocumentBusy, match="still processing"):
        await delete_document(services, workspace, doc_id)
    assert await services.db.documents.get_document(workspace, doc_id) is not None
    async with services.db.pool.connection() as conn:
        await conn.execute(
            "UPDATE documents SET updated_at = now() - %s WHERE id = %s",
            (INTERRUPTED_AFTER + timedelta(minutes=1), doc_id),
        )
    assert await delete_document(services, workspace, doc_id)
    assert await services.db.documents.get_document(workspace, doc_id) is None


MANUAL = (
    "<html><head><title>Pump manual</title></head><body><main><h1>Pump manual</h1>"
    "<p>The pump starts at dusk.</p><h2>2.12 Recommended checking order</h2><p>Check the"
    "\n<code>float-switch</code> first,\nthen the filter.</p></main></body></html>"
)


async def test_a_chunk_is_found_by_its_section_heading_and_carries_it(
    services: Services, workspace: str, docs_dir: Path
) -> None:
    await _ingest(services, workspace, write(docs_dir, "pump.html", MANUAL))
    hits = await services.searcher.search(workspace, "recommended checking order", top_k=1)
    assert hits[0].text.endswith("Check the float-switch first, then the filter.")
    assert hits[0].section == "2.12 Recommended checking order"  # the title left out
    keyword = await services.searcher.search(workspace, "recommended", top_k=1, mode="bm25")
    assert keyword and keyword[0].section == "2.12 Recommended checking order"


async def test_reread_reads_each_original_again_and_names_those_that_are_gone(
    services: Services, workspace: str, docs_dir: Path
) -> None:
    path = write(docs_dir, "pump.html", MANUAL)
    # As a reader that cut a paragraph at each source line break stored it.
    old = SourceDocument(
        str(path.resolve()),
        "Pump manual",
        "Check the float-switch first,\n\nthen the filter.",
        {"path": str(path.resolve()), "format": ".html"},
    )
    gone = docs_dir / "gone.md"
    gone_doc = SourceDocument(str(gone.resolve()), "Gone", "Lost.", {"path": str(gone.resolve())})
    await ingest_documents(services, workspace, [old, gone_doc])
    await accept_upload(services, workspace, "notes.md", b"# Notes\n\nThe office opens at 8.")
    await services.drain()
    report = (await reread_workspace(services, workspace)).as_json()
    assert (report["files"], report["updated"], report["unchanged"]) == (2, 1, 1)
    assert report["missing"] == [str(gone.resolve())]
    hits = await services.searcher.search(workspace, "float-switch filter", top_k=1)
    assert "Check the float-switch first, then the filter." in hits[0].text


async def test_the_document_text_of_every_corpus_document_holds_each_listed_sentence_whole(
    services: Services, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The document-text view (its chunks, their overlaps given once) reads whole
    sentences for the reading corpus; the vectors do not matter here, so they are cheap."""
    import json

    from convrag.evaluation.documents import normalise

    def cheap(texts: Sequence[str]) -> Matrix:
        return np.ones((len(texts), services.embedder.dim), dtype=np.float32)

    monkeypatch.setattr(services.bulk, "embed", _as_async(cheap))
    corpus = Path(__file__).parent / "documents" / "corpus"
    expects = sorted(corpus.glob("*.expect.json"))
    docs = [
        doc
        for expect in expects
        for path in corpus.glob(expect.name.replace(".expect.json", ".*"))
        if path != expect
        for doc in load_path(path, max_bytes=10**8)
    ]
    report = await ingest_documents(services, workspace, docs)  # one run, one flush
    for expect, doc_id in zip(expects, report.document_ids, strict=True):
        text = normalise(await services.db.documents.document_text(workspace, doc_id) or "")
        broken = [
            s["text"]
            for s in json.loads(expect.read_text())["sentences"]
            if normalise(s["text"]) not in text
        ]
        assert not broken, (expect.name, broken[:3])


def _as_async(fn: Any) -> Any:
    async def call(*args: Any) -> Any:
        return fn(*args)

    return call


def _counting(services: Services, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the ingest's embedding calls from now on (their texts embedded)."""
    calls: list[int] = []
    embed = services.bulk.embed

    async def counted(texts: Sequence[str]) -> Matrix:
        calls.append(len(texts))
        return await embed(texts)

    monkeypatch.setattr(services.bulk, "embed", counted)
    return calls


async def test_a_stopped_upload_resumes_after_its_last_slice_and_embeds_no_chunk_twice(
    services: Services, workspace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services.settings, "ingest_slice_chunks", 4)
    calls = _counting(services, monkeypatch)
    progress = services.db.documents.set_document_progress
    reported: list[int] = []
    stopped: list[int] = []

    async def stop_after_three_slices(ws: str, doc: str, done: int, total: int) -> None:
        reported.append(done)
        await progress(ws, doc, done, total)
        if done >= 12 and not stopped:
            stopped.append(done)
            services.stopping.set()  # a shutdown at the next slice boundary

    monkeypatch.setattr(services.db.documents, "set_document_progress", stop_after_three_slices)
    try:
        (doc_id,) = await accept_upload(services, workspace, "rules.txt", _long_text(300).encode())
        await services.drain()
    finally:
        services.stopping.clear()
    row = await services.db.documents.get_document(workspace, doc_id)
    assert row is not None and row["status"] == "processing" and row["n_chunks"] == 12
    total = row["chunks_total"]
    assert total > 20 and sum(calls) == 12

    calls.clear()
    reported.clear()
    assert await resume_stopped_uploads(services) >= 1
    await services.drain()
    row = await services.db.documents.get_document(workspace, doc_id)
    assert row is not None and row["status"] == "ready" and row["n_chunks"] == total
    assert sum(calls) == total - 12  # the 12 chunks embedded before were not embedded again
    assert reported[0] == 12  # its progress starts where it stopped, not at 0
    assert await services.db.documents.kept_vectors(workspace, [doc_id]) == {}  # stored: let go
    stored = await services.db.documents.chunk_rows(workspace)  # each chunk with its own vector
    inputs = [embedding_input(c.title, c.heading, c.text) for c in stored]
    expected = services.embedder.embed(inputs)
    vectors = np.stack([np.frombuffer(c.embedding or b"", dtype=np.float32) for c in stored])
    assert len(stored) == total and np.allclose(vectors, expected, atol=1e-4)


async def test_a_small_upload_in_another_workspace_is_ready_while_a_large_one_still_embeds(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Uploads take turns at the ingest process by workspace, a slice at a time: the
    large file's slices do not all go first."""
    monkeypatch.setattr(services.settings, "ingest_slice_chunks", 4)
    large_ws, small_ws = f"ws-large-{uuid.uuid4().hex[:8]}", f"ws-small-{uuid.uuid4().hex[:8]}"
    embed = services.bulk.embed
    order: list[str] = []
    large_started = asyncio.Event()

    async def noted(texts: Sequence[str]) -> Matrix:
        order.append("large" if "garage" in texts[0] else "small")
        large_started.set()
        return await embed(texts)

    monkeypatch.setattr(services.bulk, "embed", noted)
    (large,) = await accept_upload(services, large_ws, "rules.txt", _long_text(300).encode())
    await large_started.wait()
    (small,) = await accept_upload(services, small_ws, "note.txt", LEAVE.encode())
    while (row := await services.db.documents.get_document(small_ws, small)) and row[
        "status"
    ] != "ready":
        await asyncio.sleep(0.05)
    large_row = await services.db.documents.get_document(large_ws, large)
    assert large_row is not None and large_row["status"] == "processing"
    await services.drain()
    assert order.index("small") < len(order) - 1 - order[::-1].index("large")
    assert order.count("large") > 5


async def test_every_batch_is_chunked_and_its_chunks_counted_before_the_first_is_embedded(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    """An ingest's progress knows its chunks' total before embedding starts: it never
    grows batch by batch."""
    docs = []
    for i in range(3):
        doc = tmp_path / f"part{i}.md"
        doc.write_text(f"Part {i}. " + "Leave accrues every month. " * 30)
        docs += load_path(doc, max_bytes=10**6)
    events: list[tuple[str, int]] = []

    async def embedded(document_id: str, done: int, total: int) -> None:
        events.append(("embedded", done))

    report = await ingest_documents(
        services,
        workspace,
        docs,
        batch_docs=1,
        chunked=lambda n: events.append(("chunked", n)),
        counted=lambda n: events.append(("counted", n)),
        progress=lambda n: events.append(("stored", n)),
        chunk_progress=embedded,
    )
    kinds = [kind for kind, _ in events]
    assert kinds[:4] == ["chunked", "chunked", "chunked", "counted"]
    assert events[3] == ("counted", report.chunks_written) and kinds.count("stored") == 3
