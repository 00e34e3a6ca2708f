"""Store outages answer 503 with Retry-After and a JSON body, never a plain 500."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import psycopg
import pytest
from psycopg.errors import DiskFull
from psycopg_pool import PoolTimeout

from convrag.api.errors import (
    DATA_REFUSED,
    DATABASE_DOWN,
    DISK_FULL,
    INTERNAL_FAILURE,
    VECTOR_INDEX_DOWN,
)
from convrag.documents.base import size_text
from convrag.services import Services


@pytest.mark.parametrize(
    "failure",
    [psycopg.OperationalError("server closed the connection unexpectedly"), PoolTimeout("x")],
    ids=["connection-lost", "pool-timeout"],
)
async def test_a_database_outage_is_a_retryable_503_with_a_json_body(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
    failure: Exception,
) -> None:
    async def down(*_: object, **__: object) -> None:
        raise failure

    monkeypatch.setattr(services.db.documents, "list_documents", down)
    async with httpx.AsyncClient(timeout=30) as client:
        resp = await client.get(
            f"{base_url}/v1/documents", headers={"Authorization": f"Bearer {tenant['key']}"}
        )
    assert resp.status_code == 503
    assert resp.headers["retry-after"].isdigit()
    assert resp.json() == {"detail": DATABASE_DOWN, "error": "database_unavailable"}
    assert type(failure).__name__ not in resp.text


@pytest.mark.parametrize(
    ("failure", "detail"),
    [
        (RuntimeError("simulated failure"), INTERNAL_FAILURE),
        (psycopg.OperationalError("server closed the connection"), DATABASE_DOWN),
        (psycopg.DataError("cannot contain NUL (0x00) bytes: INSERT INTO"), DATA_REFUSED),
    ],
    ids=["internal", "database", "data-refused"],
)
async def test_a_failed_turns_503_gives_a_plain_reason_and_the_fix_not_an_exception_class(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
    failure: Exception,
    detail: str,
) -> None:
    async def down(*_: object, **__: object) -> None:
        raise failure

    auth = {"Authorization": f"Bearer {tenant['key']}", "Accept": "application/json"}
    async with httpx.AsyncClient(timeout=30) as client:
        conv = (await client.post(f"{base_url}/v1/conversations", headers=auth)).json()[
            "conversation_id"
        ]
        monkeypatch.setattr(services.db.turns, "complete_turn", down)
        resp = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers=auth,
        )
    assert resp.status_code == 503, resp.text
    assert resp.json()["detail"] == detail
    assert type(failure).__name__ not in resp.text and "INSERT" not in resp.text


async def test_a_json_turn_that_loses_the_database_midway_is_a_retryable_503(
    base_url: str, tenant: dict[str, str], services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def down(*_: object, **__: object) -> None:
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    auth = {"Authorization": f"Bearer {tenant['key']}", "Accept": "application/json"}
    async with httpx.AsyncClient(timeout=30) as client:
        conv = (await client.post(f"{base_url}/v1/conversations", headers=auth)).json()[
            "conversation_id"
        ]
        monkeypatch.setattr(services.db.turns, "complete_turn", down)  # the turn starts, then fails
        resp = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers=auth,
        )
    assert resp.status_code == 503, resp.text
    assert resp.headers["retry-after"].isdigit()


async def test_a_full_disk_is_a_503_that_says_so_for_a_route_and_for_a_turn(
    base_url: str, tenant: dict[str, str], services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DiskFull is an OperationalError, but no restart cures it: the operator is told."""

    async def full(*_: object, **__: object) -> None:
        raise DiskFull("could not extend file: No space left on device")

    auth = {"Authorization": f"Bearer {tenant['key']}", "Accept": "application/json"}
    async with httpx.AsyncClient(timeout=30) as client:
        conv = (await client.post(f"{base_url}/v1/conversations", headers=auth)).json()[
            "conversation_id"
        ]
        monkeypatch.setattr(services.db.documents, "list_documents", full)
        monkeypatch.setattr(services.db.turns, "complete_turn", full)
        listed = await client.get(f"{base_url}/v1/documents", headers=auth)
        asked = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers=auth,
        )
        monkeypatch.undo()
        turns = (await client.get(f"{base_url}/v1/conversations/{conv}", headers=auth)).json()
    for resp in (listed, asked):
        assert resp.status_code == 503, resp.text
        assert resp.json()["detail"] == DISK_FULL
    assert listed.json()["error"] == "disk_full"
    assert [(t["status"], t["error"]) for t in turns["turns"]] == [
        ("failed", "the database is out of disk space")
    ]


@pytest.mark.parametrize("accept", ["application/json", "text/event-stream"])
async def test_a_turn_whose_checkpoint_write_fails_after_it_was_stored_is_answered(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
    accept: str,
) -> None:
    """``persist`` committed the turn as ``done``; LangGraph's checkpoint write at the
    run's end then hit a full disk. The client gets the stored answer, not a 503 for a
    turn the conversation shows as answered."""

    async def full(*_: object, **__: object) -> None:
        raise DiskFull("could not extend file: No space left on device")

    auth = {"Authorization": f"Bearer {tenant['key']}", "Accept": accept}
    async with httpx.AsyncClient(timeout=30) as client:
        conv = (await client.post(f"{base_url}/v1/conversations", headers=auth)).json()[
            "conversation_id"
        ]
        monkeypatch.setattr(services.db.checkpoints, "aput", full)
        resp = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers=auth,
        )
        monkeypatch.undo()
        turns = (await client.get(f"{base_url}/v1/conversations/{conv}", headers=auth)).json()
    assert resp.status_code == 200, resp.text
    (turn,) = turns["turns"]
    assert turn["status"] == "done" and turn["answer"]
    if accept == "application/json":
        assert resp.json()["answer"] == turn["answer"]
    else:
        assert "event: done" in resp.text and "event: error" not in resp.text


async def test_the_api_docs_load_their_assets_from_the_service_not_a_cdn(base_url: str) -> None:
    async with httpx.AsyncClient(timeout=30) as client:
        page = await client.get(f"{base_url}/docs")
        assert page.status_code == 200
        assets = [a for a in page.text.split('"') if a.endswith((".js", ".css")) and "/" in a]
        assert assets and all(a.startswith("/") for a in assets), assets
        for asset in assets:
            assert (await client.get(f"{base_url}{asset}")).status_code == 200


async def test_a_vector_index_outage_during_delete_is_503_and_deletes_nothing(
    base_url: str,
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pymilvus import MilvusException

    def down(*_: object, **__: object) -> None:
        raise MilvusException(message="failed to connect to 127.0.0.1:19530")

    auth = {"Authorization": f"Bearer {tenant['key']}"}
    async with httpx.AsyncClient(timeout=30) as client:
        conv = (await client.post(f"{base_url}/v1/conversations", headers=auth)).json()[
            "conversation_id"
        ]
        monkeypatch.setattr(services.index, "delete_conversation", down)
        resp = await client.delete(f"{base_url}/v1/conversations/{conv}", headers=auth)
        assert resp.status_code == 503 and resp.headers["retry-after"].isdigit()
        assert resp.json() == {"detail": VECTOR_INDEX_DOWN, "error": "vector_index_unavailable"}
        assert "19530" not in resp.text and "MilvusException" not in resp.text
        assert (
            await client.get(f"{base_url}/v1/conversations/{conv}", headers=auth)
        ).status_code == 200
        monkeypatch.undo()
        done = await client.delete(f"{base_url}/v1/conversations/{conv}", headers=auth)
        assert done.status_code == 204


async def test_a_chunked_body_over_the_limit_is_413_naming_the_setting(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    auth = {"Authorization": f"Bearer {tenant['key']}"}

    async def body(total: int, head: bytes = b"", tail: bytes = b"") -> AsyncIterator[bytes]:
        yield head
        for _ in range(total // 65536 + 1):
            yield b"x" * 65536
        yield tail

    async with httpx.AsyncClient(timeout=60) as client:
        conv = (await client.post(f"{base_url}/v1/conversations", headers=auth)).json()[
            "conversation_id"
        ]
        message = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            content=body(services.settings.max_body_bytes),
            headers={**auth, "Content-Type": "application/json"},
        )
        assert message.status_code == 413 and "MAX_BODY_BYTES" in message.json()["detail"]
        head = (
            b'--b\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n'
            b"Content-Type: text/plain\r\n\r\n"
        )
        upload = await client.post(
            f"{base_url}/v1/documents",
            content=body(services.settings.max_file_bytes + 70_000, head, b"\r\n--b--\r\n"),
            headers={**auth, "Content-Type": "multipart/form-data; boundary=b"},
        )
        assert upload.status_code == 413, upload.text
        # The setting's own value, not the larger body its multipart framing is allowed.
        limit = services.settings.max_file_bytes
        assert upload.json()["detail"] == (
            f"file: over the {size_text(limit)} limit ({limit} bytes, the server's MAX_FILE_BYTES)"
        )


async def test_a_turn_whose_search_failed_is_a_retryable_503_not_a_not_found(
    base_url: str, tenant: dict[str, str], services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def down(*_: object, **__: object) -> None:
        raise ConnectionError("the vector index is down")

    auth = {"Authorization": f"Bearer {tenant['key']}", "Accept": "application/json"}
    async with httpx.AsyncClient(timeout=30) as client:
        conv = (await client.post(f"{base_url}/v1/conversations", headers=auth)).json()[
            "conversation_id"
        ]
        monkeypatch.setattr(services.searcher, "_dense", down)
        monkeypatch.setattr(services.searcher, "_keyword", down)
        resp = await client.post(
            f"{base_url}/v1/conversations/{conv}/messages",
            json={"content": "What is Prasad Chaudhari's salary?"},
            headers=auth,
        )
    assert resp.status_code == 503, resp.text
    assert resp.headers["retry-after"].isdigit()
    assert resp.json()["detail"] == VECTOR_INDEX_DOWN
