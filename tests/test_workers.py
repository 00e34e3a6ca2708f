"""More than one process on one database: ``convrag serve --workers 2`` (which owns the
embedded PostgreSQL and Milvus Lite and hands their URLs to its workers) and a second,
separate ``convrag serve`` pointed at the same stores by ``DATABASE_URL`` / ``MILVUS_URI``.

The servers are real subprocesses on free ports, with an OpenAI-compatible stub as the
LLM. Every wait is bounded, and the module's last test stops them and checks that no
worker, PostgreSQL or Milvus Lite server outlives them; the fixture's teardown stops
whatever a failed test left running.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from convrag.api.metrics import MULTIPROCESS_ENV
from convrag.assistant import STOPPED_TURN
from convrag.errors import ANSWERING
from convrag.stores.database import Database
from convrag.stores.embedded import EmbeddedPostgres, ManagedMilvusLite, pid_alive
from convrag.testing.openai_stub import OpenAIStub, Reply
from tests.serving import Server, free_port, scratch_dir, spawn

#: Questions with this word get a slow answer: the turn stays running while a second
#: message arrives.
SLOW = "zebra"
RATE_LIMIT = 20
FACT = "The parking permit at the Zanzibar office costs 40 euros per month."
CROSSING = f"The {SLOW} crossing on Main Street is repainted every spring."
QUESTION = "How much does the parking permit at the Zanzibar office cost per month?"


def _workers_of(pid: int) -> list[int]:
    """The pids of the uvicorn workers (multiprocessing children) of process ``pid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"spawn_main" in cmdline:
            found.append(int(stat.parent.name))
    return found


@dataclass
class Cluster:
    """``serve --workers 2`` (``workers``) and a separate server (``other``) sharing the
    stores that ``workers`` owns."""

    data_dir: Path
    database_url: str
    workers: Server
    other: Server
    holders: list[Any] = field(default_factory=list)

    def leave_stores(self) -> None:
        """Stop holding the embedded servers, so that ``workers`` alone owns them."""
        while self.holders:
            self.holders.pop().stop()

    def by_name(self, name: str) -> Server:
        return self.workers if name == "workers" else self.other


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    logs = tmp_path_factory.mktemp("workers")
    with scratch_dir("workers") as data_dir, OpenAIStub.in_thread() as stub:
        stub.add_rule(SLOW, Reply(content=" ".join(["Stripes"] * 12) + " [1].", token_delay_s=0.25))
        env = {
            **os.environ,
            "OPENAI_BASE_URL": stub.base_url,
            "OPENAI_API_KEY": "test-key",
            "LLM_MODEL": "openai:stub-model",
            "RATE_LIMIT_PER_MINUTE": str(RATE_LIMIT),
            "INGEST_EMBEDDING": "thread",
        }
        workers = spawn(
            "serve --workers 2",
            free_port(),
            logs / "workers.log",
            {**env, "CONVRAG_DATA_DIR": str(data_dir)},
            "--workers",
            "2",
        )
        other: Server | None = None
        holders: list[Any] = []
        try:
            workers.wait_ready()
            # Join the stores the way another convrag command would, for their URLs.
            pg, milvus = EmbeddedPostgres(data_dir), ManagedMilvusLite(data_dir)
            holders.extend([pg, milvus])
            database_url, milvus_uri = pg.start(), milvus.start()
            other = spawn(
                "serve (separate)",
                free_port(),
                logs / "other.log",
                {
                    **env,
                    "CONVRAG_DATA_DIR": str(logs / "unused"),
                    "DATABASE_URL": database_url,
                    "MILVUS_URI": milvus_uri,
                    "MILVUS_LITE": "true",
                },
            )
            other.wait_ready()
            yield Cluster(data_dir, database_url, workers, other, holders)
        finally:
            if other is not None:
                other.stop()
            for holder in holders:
                holder.stop()
            workers.stop()


def test_each_worker_names_the_stores_serve_started_for_it_embedded(cluster: Cluster) -> None:
    """The workers get their stores' URLs from ``serve``, not from the operator: their
    startup lines say embedded; the separate server, given URLs, says external."""
    started = ", started by `convrag serve --workers`"
    deadline = time.monotonic() + 30  # /healthz answered once the first worker was up
    while True:
        lines = [ln for ln in cluster.workers.log.read_text().splitlines() if "PostgreSQL " in ln]
        if len(lines) >= 2 or time.monotonic() > deadline:
            break
        time.sleep(0.25)
    assert len(lines) == 2, cluster.workers.tail()
    for line in lines:
        assert f"PostgreSQL embedded{started}; Milvus Lite, embedded{started};" in line, line
    other = cluster.other.log.read_text()
    assert "PostgreSQL external (DATABASE_URL); Milvus external (MILVUS_URI);" in other, other


async def _key(cluster: Cluster) -> tuple[str, dict[str, str]]:
    workspace = f"ws-{uuid.uuid4().hex[:10]}"
    async with Database.from_url(cluster.database_url, max_size=1) as db:
        key = await db.workspaces.create_api_key(workspace)
    return workspace, {"Authorization": f"Bearer {key}"}


async def _upload(
    client: httpx.AsyncClient, cluster: Cluster, workspace: str, headers: dict[str, str], text: str
) -> str:
    """Upload ``text`` through ``serve --workers`` and wait until it is ready; its id."""
    upload = await client.post(
        f"{cluster.workers.url}/v1/documents",
        files={"file": (f"{uuid.uuid4().hex[:8]}.txt", text.encode(), "text/plain")},
        headers=headers,
    )
    assert upload.status_code == 202, upload.text
    document = str(upload.json()["id"])
    async with Database.from_url(cluster.database_url, max_size=1) as db:
        for _ in range(600):
            row = await db.documents.get_document(workspace, document)
            if row is not None and row["status"] != "processing":
                break
            await asyncio.sleep(0.1)
    assert row is not None and row["status"] == "ready", row
    return document


async def _message(
    client: httpx.AsyncClient, server: Server, conversation: str, headers: dict[str, str]
) -> tuple[int, list[str]]:
    """POST a slow message; its status and, when streamed, the names of its events."""
    url = f"{server.url}/v1/conversations/{conversation}/messages"
    body = {"content": f"When is the {SLOW} crossing on Main Street repainted?"}
    async with client.stream("POST", url, json=body, headers=headers) as resp:
        if resp.status_code != 200:
            await resp.aread()
            return resp.status_code, []
        return 200, [
            line.removeprefix("event:").strip()
            async for line in resp.aiter_lines()
            if line.startswith("event:")
        ]


@pytest.mark.parametrize(("first", "second"), [("workers", "workers"), ("workers", "other")])
async def test_two_messages_at_once_to_one_conversation_answer_one_and_409_the_other(
    cluster: Cluster, first: str, second: str
) -> None:
    workspace, headers = await _key(cluster)
    async with httpx.AsyncClient(timeout=120) as client:
        # With nothing relevant in the workspace, the answer would not ask the LLM.
        await _upload(client, cluster, workspace, headers, CROSSING)
        created = await client.post(f"{cluster.workers.url}/v1/conversations", headers=headers)
        conversation = created.json()["conversation_id"]
        replies = await asyncio.gather(
            _message(client, cluster.by_name(first), conversation, headers),
            _message(client, cluster.by_name(second), conversation, headers),
        )
    assert sorted(status for status, _ in replies) == [200, 409]
    answered = next(events for status, events in replies if status == 200)
    assert answered[-1] == "done", answered
    async with (
        Database.from_url(cluster.database_url, max_size=1) as db,
        db.pool.connection() as conn,
    ):
        rows = await (
            await conn.execute(
                "SELECT status FROM conversation_turns WHERE conversation_id = %s",
                (conversation,),
            )
        ).fetchall()
    assert [r["status"] for r in rows] == ["done"]


async def _answer_events(
    client: httpx.AsyncClient,
    server: Server,
    conversation: str,
    headers: dict[str, str],
    first_token: asyncio.Event,
) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events of a slow message, name and data; ``first_token`` is set at its
    first token."""
    url = f"{server.url}/v1/conversations/{conversation}/messages"
    body = {"content": f"When is the {SLOW} crossing on Main Street repainted?"}
    events: list[tuple[str, dict[str, Any]]] = []
    async with client.stream("POST", url, json=body, headers=headers) as resp:
        assert resp.status_code == 200, await resp.aread()
        name = ""
        async for line in resp.aiter_lines():
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
            elif line.startswith("data:"):
                events.append((name, json.loads(line.removeprefix("data:"))))
                if name == "token":
                    first_token.set()
    return events


async def _answering(
    client: httpx.AsyncClient, cluster: Cluster
) -> tuple[str, dict[str, str], asyncio.Task[list[tuple[str, dict[str, Any]]]]]:
    """A conversation that ``serve --workers`` is answering a slow message in, once its
    first token has come: its id, the key's headers and the task reading its events."""
    workspace, headers = await _key(cluster)
    # With nothing relevant in the workspace, the answer would not ask the LLM.
    await _upload(client, cluster, workspace, headers, CROSSING)
    created = await client.post(f"{cluster.workers.url}/v1/conversations", headers=headers)
    conversation = str(created.json()["conversation_id"])
    first_token = asyncio.Event()
    events = asyncio.create_task(
        _answer_events(client, cluster.workers, conversation, headers, first_token)
    )
    await asyncio.wait_for(first_token.wait(), 60)
    return conversation, headers, events


async def test_a_stop_sent_to_another_process_stops_the_answer_it_writes(
    cluster: Cluster,
) -> None:
    async with httpx.AsyncClient(timeout=120) as client:
        conversation, headers, answering = await _answering(client, cluster)
        stopped = await client.post(
            f"{cluster.other.url}/v1/conversations/{conversation}/stop", headers=headers
        )
        events = await answering
        detail = await client.get(
            f"{cluster.other.url}/v1/conversations/{conversation}", headers=headers
        )
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["stopped"] is True
    assert events[-1] == ("error", {"code": "stopped", "message": STOPPED_TURN})
    assert [(t["id"], t["status"], t["error"]) for t in detail.json()["turns"]] == [
        (stopped.json()["turn_id"], "failed", STOPPED_TURN)
    ]


async def test_a_delete_sent_to_another_process_while_it_answers_is_a_409(
    cluster: Cluster,
) -> None:
    async with httpx.AsyncClient(timeout=120) as client:
        conversation, headers, answering = await _answering(client, cluster)
        url = f"{cluster.other.url}/v1/conversations/{conversation}"
        refused = await client.delete(url, headers=headers)
        events = await answering
        deleted = await client.delete(url, headers=headers)
        gone = await client.get(
            f"{cluster.workers.url}/v1/conversations/{conversation}", headers=headers
        )
    assert refused.status_code == 409 and refused.json()["detail"] == ANSWERING
    assert events[-1][0] == "done"
    assert deleted.status_code == 204 and gone.status_code == 404


async def _sources_of_answer(
    client: httpx.AsyncClient, server: Server, headers: dict[str, str]
) -> set[str]:
    """The document ids among the sources of a fresh conversation's answer to QUESTION."""
    created = await client.post(f"{server.url}/v1/conversations", headers=headers)
    reply = await client.post(
        f"{server.url}/v1/conversations/{created.json()['conversation_id']}/messages",
        json={"content": QUESTION},
        headers={**headers, "Accept": "application/json"},
    )
    assert reply.status_code == 200, reply.text
    return {s["document_id"] for s in reply.json()["sources"] if s["document_id"]}


async def test_a_document_uploaded_through_one_process_is_found_then_forgotten_by_another(
    cluster: Cluster,
) -> None:
    workspace, headers = await _key(cluster)
    async with httpx.AsyncClient(timeout=120) as client:
        # The other process loads its in-process engines for the empty workspace first,
        # so what follows has to notice another process's writes.
        assert await _sources_of_answer(client, cluster.other, headers) == set()
        document = await _upload(client, cluster, workspace, headers, FACT)
        assert document in await _sources_of_answer(client, cluster.other, headers)
        deleted = await client.delete(
            f"{cluster.workers.url}/v1/documents/{document}", headers=headers
        )
        assert deleted.status_code == 204, deleted.text
        assert document not in await _sources_of_answer(client, cluster.other, headers)


async def test_the_rate_limit_is_one_per_key_across_processes(cluster: Cluster) -> None:
    _, headers = await _key(cluster)
    async with httpx.AsyncClient(timeout=60) as client:
        replies = [
            await client.get(f"{server.url}/v1/documents", headers=headers)
            for _ in range(RATE_LIMIT)
            for server in (cluster.workers, cluster.other)
        ]
    codes = [r.status_code for r in replies]
    assert set(codes) == {200, 429}
    # Each process alone would let all of them through; together they let through the
    # bucket's size, plus what refilled meanwhile.
    assert RATE_LIMIT <= codes.count(200) < RATE_LIMIT + 5
    refused = next(r for r in replies if r.status_code == 429)
    assert int(refused.headers["Retry-After"]) >= 1
    assert refused.json()["detail"] == f"rate limit of {RATE_LIMIT} requests/minute exceeded"


def _count(metrics: str, series: str) -> float:
    """The value of ``series`` in a Prometheus text exposition (0 when absent)."""
    for line in metrics.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


async def test_metrics_count_every_worker_whichever_answers_the_scrape(cluster: Cluster) -> None:
    """Each worker counted its own: a scrape saw whichever worker took the connection,
    so counters seemed to jump back and forth."""
    series = 'convrag_http_errors_total{status="404"}'
    url = cluster.workers.url

    async def fresh(path: str) -> httpx.Response:
        # A connection of its own each time, so that both workers take some.
        async with httpx.AsyncClient(timeout=60) as client:
            return await client.get(url + path, headers={"Connection": "close"})

    before = _count((await fresh("/metrics")).text, series)
    sent = 40
    for _ in range(sent):
        assert (await fresh("/no-such-route")).status_code == 404
    scrapes = [_count((await fresh("/metrics")).text, series) for _ in range(8)]
    assert scrapes == [before + sent] * 8


def test_stopping_serve_stops_its_workers_and_the_embedded_servers(cluster: Cluster) -> None:
    workers = _workers_of(cluster.workers.proc.pid)
    assert len(workers) == 2, "serve --workers 2 runs its workers as child processes"
    cluster.other.stop()
    cluster.leave_stores()  # now the serve process is the stores' only holder
    assert cluster.workers.stop() == 0, cluster.workers.tail()
    assert not [pid for pid in workers if pid_alive(pid)]
    assert not (cluster.data_dir / "pg" / "postmaster.pid").exists()
    assert not (cluster.data_dir / "milvus" / "server.json").exists()


def test_the_workers_stop_when_serve_is_killed_outright(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Killed by SIGKILL (an OOM kill), ``serve`` cannot stop its workers: they notice
    their supervisor is gone and stop themselves, freeing the port for a restart."""
    import signal
    import time

    with scratch_dir("kill") as data_dir:
        port = free_port()
        # Killed, serve cannot remove the metrics directory it would make: one of the test's.
        metrics = data_dir / "metrics"
        metrics.mkdir()
        server = spawn(
            "serve --workers 2 (killed)",
            port,
            tmp_path_factory.mktemp("killed") / "serve.log",
            {**os.environ, "CONVRAG_DATA_DIR": str(data_dir), MULTIPROCESS_ENV: str(metrics)},
            "--workers",
            "2",
        )
        workers: list[int] = []
        try:
            server.wait_ready()
            workers = _workers_of(server.proc.pid)
            assert len(workers) == 2
            server.proc.send_signal(signal.SIGKILL)
            server.proc.wait(10)
            deadline = time.monotonic() + 30
            while [pid for pid in workers if pid_alive(pid)] and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not [pid for pid in workers if pid_alive(pid)], server.tail()
        finally:
            for pid in workers:
                if pid_alive(pid):
                    os.kill(pid, signal.SIGKILL)
