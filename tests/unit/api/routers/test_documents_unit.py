"""Document routes: upload (its ingest is started in the background, not run here),
list (cursor pages in headers), read a row and its text, delete."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from convrag.ids import document_id_for
from tests.api.fakes import FakeStack, client, fake_app, fake_stack
from tests.unit.api.routers.checks import assert_the_same_404

NOTES = ("notes.md", b"# Notes\n\nThe office opens at nine.\n", "text/markdown")


async def test_an_upload_is_202_processing_and_its_ingest_starts_in_the_background(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    resp = await api.post("/v1/documents", files={"file": NOTES}, headers=auth)
    assert resp.status_code == 202
    body = resp.json()
    assert body["id"] == document_id_for("acme", "upload:notes.md")
    assert (body["source"], body["status"], body["n_documents"]) == (
        "upload:notes.md",
        "processing",
        1,
    )
    assert [d["id"] for d in body["documents"]] == [body["id"]]
    assert stack.services.spawned == ["notes.md"]
    kept = stack.db.rows.documents[body["id"]]["upload_path"]
    assert stack.db.rows.originals[kept] == ("acme", "notes.md", NOTES[1])


async def test_an_unsupported_format_gets_415_naming_the_supported_ones(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    resp = await api.post(
        "/v1/documents",
        files={"file": ("tool.exe", b"MZ", "application/octet-stream")},
        headers=auth,
    )
    assert resp.status_code == 415
    assert resp.json()["detail"].startswith("file: unsupported format of 'tool.exe'; supported:")
    assert ".md" in resp.json()["detail"]
    assert stack.db.rows.documents == {}


@pytest.mark.parametrize(
    ("filename", "problem"),
    [
        ("x" * 300 + ".txt", "the filename is 304 bytes long"),
        ("../", "a filename is required"),
    ],
)
async def test_a_bad_file_name_gets_422_naming_the_problem(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack, filename: str, problem: str
) -> None:
    resp = await api.post(
        "/v1/documents", files={"file": (filename, b"hello", "text/plain")}, headers=auth
    )
    assert resp.status_code == 422
    assert resp.json()["errors"][0]["field"] == "file"
    assert problem in resp.json()["detail"]
    assert stack.services.spawned == []


async def test_two_files_in_one_upload_get_422(
    api: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    resp = await api.post(
        "/v1/documents",
        files=[("file", NOTES), ("file", ("b.txt", b"b", "text/plain"))],
        headers=auth,
    )
    assert resp.status_code == 422
    assert resp.json()["detail"] == "file: one file per upload, got 2; send each alone"


async def test_an_empty_file_gets_422_and_records_nothing(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    resp = await api.post(
        "/v1/documents", files={"file": ("empty.txt", b"", "text/plain")}, headers=auth
    )
    assert resp.status_code == 422
    assert resp.json()["detail"].startswith("file: empty.txt")
    assert stack.db.rows.documents == {}
    assert stack.db.rows.originals == {}


async def test_a_file_over_max_file_bytes_gets_413(tmp_path: Path) -> None:
    stack = fake_stack(tmp_path, max_file_bytes=16)
    auth = await stack.key("acme")
    async with client(fake_app(stack)) as api:
        resp = await api.post(
            "/v1/documents", files={"file": ("big.txt", b"x" * 100, "text/plain")}, headers=auth
        )
    assert resp.status_code == 413
    assert "16" in resp.json()["detail"]
    assert stack.db.rows.documents == {}


async def test_an_upload_sent_as_json_not_multipart_gets_415_naming_the_fix(
    api: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    resp = await api.post("/v1/documents", json={"file": "notes.md"}, headers=auth)
    assert resp.status_code == 415
    assert "multipart/form-data" in resp.json()["detail"]


async def test_documents_list_oldest_first_in_pages_linked_by_headers(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    ids = [stack.db.documents.add_document("acme", f"{n}.txt") for n in "abc"]
    stack.db.documents.add_document("other", "theirs.txt")
    first = await api.get("/v1/documents?limit=2", headers=auth)
    assert first.status_code == 200
    assert [d["id"] for d in first.json()] == ids[:2]
    cursor = first.headers["X-Next-Cursor"]
    assert first.headers["Link"] == (
        f'<http://test/v1/documents?limit=2&cursor={cursor}>; rel="next"'
    )
    last = await api.get(f"/v1/documents?limit=2&cursor={cursor}", headers=auth)
    assert [d["id"] for d in last.json()] == ids[2:]
    assert "Link" not in last.headers
    assert "X-Next-Cursor" not in last.headers


async def test_a_document_read_from_the_servers_disk_is_shown_by_its_file_name(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    document_id = stack.db.documents.add_document("acme", "/srv/private/handbook.txt")
    (listed,) = (await api.get("/v1/documents", headers=auth)).json()
    one = (await api.get(f"/v1/documents/{document_id}", headers=auth)).json()
    assert listed["source"] == one["source"] == "handbook.txt"


async def test_a_bad_limit_or_a_conversations_cursor_gets_422_naming_the_parameter(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    for _ in range(2):
        await stack.db.conversations.create_conversation("acme")
    page = (await api.get("/v1/conversations?limit=1", headers=auth)).json()
    for query in ("limit=0", "limit=101", f"cursor={page['next_cursor']}"):
        resp = await api.get(f"/v1/documents?{query}", headers=auth)
        assert resp.status_code == 422, query
        assert resp.json()["errors"][0]["field"] == f"query.{query.split('=')[0]}"


async def test_a_document_reads_as_its_row_with_its_ingest_status(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    document_id = stack.db.documents.add_document(
        "acme", "a.txt", status="failed", error="unreadable"
    )
    resp = await api.get(f"/v1/documents/{document_id}", headers=auth)
    assert resp.status_code == 200
    body = resp.json()
    assert (body["id"], body["status"], body["error"]) == (document_id, "failed", "unreadable")
    assert set(body) == {
        "id",
        "source",
        "title",
        "status",
        "error",
        "n_chunks",
        "chunks_total",
        "chunks_per_s",
        "eta_s",
        "created_at",
        "updated_at",
    }
    assert (body["chunks_per_s"], body["eta_s"]) == (None, None)


async def test_an_uploads_row_gives_its_ingest_rate_and_estimate_running_and_finished(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    now = datetime.now(UTC)
    running = stack.db.documents.add_document("acme", "upload:big.pdf", status="processing")
    stack.db.rows.documents[running].update(
        n_chunks=64,
        chunks_total=256,
        progress_started_at=now - timedelta(seconds=3600),
        progress_started_chunks=0,
        progress_at=now - timedelta(seconds=60),
    )
    finished = stack.db.documents.add_document("acme", "upload:small.md")
    stack.db.rows.documents[finished].update(
        n_chunks=100,
        chunks_total=100,
        progress_started_at=now - timedelta(hours=2, seconds=50),
        progress_started_chunks=0,
        progress_at=now - timedelta(hours=2),
    )
    run = (await api.get(f"/v1/documents/{running}", headers=auth)).json()
    done = (await api.get(f"/v1/documents/{finished}", headers=auth)).json()
    # 64 chunks in about an hour; 192 left at that rate: about three hours.
    assert 0 < run["chunks_per_s"] <= 64 / 3600 + 0.001
    assert 3 * 3600 - 60 <= run["eta_s"] <= 3 * 3600 * 1.01
    assert (done["chunks_per_s"], done["eta_s"]) == (2.0, 0.0)


async def test_another_workspaces_unknown_or_malformed_document_ids_get_the_same_404(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    theirs = stack.db.documents.add_document("other", "theirs.txt", text="secret")
    paths = ["GET /v1/documents/{id}", "GET /v1/documents/{id}/text", "DELETE /v1/documents/{id}"]
    await assert_the_same_404(api, auth, theirs, "document", paths)
    assert theirs in stack.db.rows.documents
    assert stack.index.deleted == []


async def test_a_ready_documents_text_reads_whole_and_in_character_ranges(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    document_id = stack.db.documents.add_document("acme", "a.txt", text="héllo world")
    whole = await api.get(f"/v1/documents/{document_id}/text", headers=auth)
    assert (whole.status_code, whole.text) == (200, "héllo world")
    assert whole.headers["X-Total-Chars"] == "11"
    assert "X-Next-Offset" not in whole.headers
    part = await api.get(f"/v1/documents/{document_id}/text?offset=1&limit=4", headers=auth)
    assert (part.text, part.headers["X-Next-Offset"]) == ("éllo", "5")


async def test_a_text_offset_past_the_end_gets_422_naming_offset(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    document_id = stack.db.documents.add_document("acme", "a.txt", text="short")
    for query, field in (("offset=6", "query.offset"), ("limit=0", "query.limit")):
        resp = await api.get(f"/v1/documents/{document_id}/text?{query}", headers=auth)
        assert resp.status_code == 422, query
        assert resp.json()["errors"][0]["field"] == field
    past = await api.get(f"/v1/documents/{document_id}/text?offset=6", headers=auth)
    assert "past the end of the text (5 characters)" in past.json()["detail"]


@pytest.mark.parametrize(
    ("status", "error", "says"),
    [("processing", None, "is processing"), ("failed", "unreadable", "is failed: unreadable")],
)
async def test_the_text_of_a_document_not_ready_gets_409_saying_its_status(
    api: httpx.AsyncClient,
    auth: dict[str, str],
    stack: FakeStack,
    status: str,
    error: str | None,
    says: str,
) -> None:
    document_id = stack.db.documents.add_document("acme", "a.txt", status=status, error=error)
    resp = await api.get(f"/v1/documents/{document_id}/text", headers=auth)
    assert resp.status_code == 409
    assert resp.json()["detail"].startswith(f"document {document_id} {says}")


async def test_a_delete_is_204_removes_the_document_from_both_stores_then_404(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    document_id = stack.db.documents.add_document("acme", "a.txt", text="hello")
    resp = await api.delete(f"/v1/documents/{document_id}", headers=auth)
    assert resp.status_code == 204
    assert document_id not in stack.db.rows.documents
    assert stack.index.deleted == [("acme", document_id)]
    assert (await api.get(f"/v1/documents/{document_id}", headers=auth)).status_code == 404


async def test_deleting_a_document_whose_ingest_runs_gets_409_and_leaves_it(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    document_id = stack.db.documents.add_document(
        "acme", "a.txt", status="processing", updated_at=datetime.now(UTC)
    )
    resp = await api.delete(f"/v1/documents/{document_id}", headers=auth)
    assert resp.status_code == 409
    assert "still processing" in resp.json()["detail"]
    assert document_id in stack.db.rows.documents
    assert stack.index.deleted == []


async def test_a_document_left_processing_by_a_dead_process_is_deleted(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    long_ago = datetime.now(UTC) - timedelta(days=1)
    document_id = stack.db.documents.add_document(
        "acme", "a.txt", status="processing", updated_at=long_ago
    )
    resp = await api.delete(f"/v1/documents/{document_id}", headers=auth)
    assert resp.status_code == 204
    assert document_id not in stack.db.rows.documents
