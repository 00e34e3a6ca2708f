"""kill -9 at random points, restart, retry with the idempotency key: is anything lost or
written twice?

`convrag serve` runs on a fresh data directory holding the sample documents, with the
OpenAI stub answering slowly (``--token-delay`` between chunks, so a kill often lands
mid-answer) as its LLM. One client asks questions over SSE, each with its own
``Idempotency-Key``, three per conversation. A killer sends SIGKILL to the server
between 0.2 s and ``--max-gap`` seconds after it is up, ``--kills`` times, starting it
again each time. A message whose stream broke is retried with the same key until it is
answered. At the end, with the server
stopped, the turns table is checked against what the client saw:

* acknowledged turns (a ``done`` event reached the client) missing or changed: must be 0;
* keys with more than one turn: must be 0;
* questions the server had stored when it was killed (``processing`` then) and that end
  without a final status (``done`` or ``failed``): must be 0.

    python benchmarks/kill_restart.py --kills 20 --out bench-out/kill-restart.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ["LANGSMITH_TRACING"] = "false"

from bench_common import clean_env, cleanup_stack, free_port, log, report, stub_process

SAMPLES = Path(__file__).resolve().parent.parent / "src" / "convrag" / "sample_docs"
WORKSPACE = "faults"
QUESTIONS = [
    "What is Prasad Chaudhari's salary?",
    "What about her basic salary?",
    "How many days of paid annual leave does an employee get?",
    "And how is sick leave paid?",
    "How do volcanic eruptions begin?",
    "What are pyroclastic flows?",
]


def prepare_samples(data_dir: Path) -> str:
    """Ingest the sample documents and make an API key (in a child process)."""
    from convrag.config import Settings
    from convrag.documents.load import load_path
    from convrag.ingest import ingest_documents
    from convrag.services import open_services

    async def go() -> str:
        async with open_services(Settings(data_dir=data_dir)) as services:
            for path in sorted(SAMPLES.iterdir()):
                await ingest_documents(services, WORKSPACE, load_path(path, max_bytes=10**7))
            return await services.db.workspaces.create_api_key(WORKSPACE)

    return asyncio.run(go())


def _turns(data_dir: Path) -> list[dict[str, Any]]:
    """Every turn of the workspace (in a child process, after the server has stopped)."""
    from convrag.config import Settings
    from convrag.services import open_services

    async def go() -> list[dict[str, Any]]:
        async with (
            open_services(Settings(data_dir=data_dir)) as services,
            services.db.pool.connection() as conn,
        ):
            rows = await (
                await conn.execute(
                    "SELECT id::text AS id, idempotency_key AS key, status, answer "
                    "FROM conversation_turns WHERE workspace_id = %s",
                    (WORKSPACE,),
                )
            ).fetchall()
        return [dict(r) for r in rows]

    return asyncio.run(go())


class Server:
    """`convrag serve` on one port, started again after each kill."""

    def __init__(self, data_dir: Path, stub_url: str) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = clean_env(
            CONVRAG_DATA_DIR=str(data_dir),
            LLM_MODEL="openai:stub-model",
            OPENAI_BASE_URL=stub_url,
            OPENAI_API_KEY="bench-key",
            RATE_LIMIT_PER_MINUTE="100000000",
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = open(data_dir / "server.log", "ab")  # noqa: SIM115 - closed in stop()

    async def start(self) -> float:
        exe = Path(sys.executable).with_name("convrag")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [str(exe), "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=self.env,
            cwd=str(self.data_dir),
        )
        async with httpx.AsyncClient(timeout=2) as http:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"convrag serve exited; see {self.data_dir}/server.log")
                try:
                    if (await http.get(f"{self.base}/healthz")).status_code == 200:
                        return time.perf_counter() - t0
                except httpx.HTTPError:
                    pass
                await asyncio.sleep(0.1)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()


async def ask(
    http: httpx.AsyncClient, base: str, key: str, conv: str, question: str, idem: str
) -> tuple[str, dict[str, Any] | None]:
    """('done', event) when answered; ('busy'|'broken'|'error', None) otherwise."""
    try:
        async with http.stream(
            "POST",
            f"{base}/v1/conversations/{conv}/messages",
            json={"content": question},
            headers={"Authorization": f"Bearer {key}", "Idempotency-Key": idem},
        ) as resp:
            if resp.status_code == 409:
                return "busy", None
            if resp.status_code != 200:
                return "error", None
            name = None
            async for line in resp.aiter_lines():
                if line.startswith("event: "):
                    name = line[7:].strip()
                elif line.startswith("data: ") and name == "done":
                    return "done", json.loads(line[6:])
                elif line.startswith("data: ") and name == "error":
                    return "error", None
    except (httpx.HTTPError, OSError):
        return "broken", None
    return "broken", None


async def run(kills: int, token_delay: float, max_gap: float, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    data_dir = Path(tempfile.mkdtemp(prefix="cv-kill-"))
    spawn = multiprocessing.get_context("spawn")
    try:
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            key = await asyncio.get_running_loop().run_in_executor(pool, prepare_samples, data_dir)
        with stub_process(data_dir, token_delay_s=token_delay) as stub_url:
            server = Server(data_dir, stub_url)
            starts = [await server.start()]
            acknowledged: dict[str, str] = {}  # idempotency key -> answer
            outcomes: dict[str, int] = {"done": 0, "busy": 0, "broken": 0, "error": 0}
            retries = 0
            killed = 0
            stop_client = asyncio.Event()
            restarted = asyncio.Event()
            restarted.set()

            async def killer() -> None:
                nonlocal killed
                while killed < kills:
                    await asyncio.sleep(rng.uniform(0.2, max_gap))
                    restarted.clear()
                    server.kill()
                    killed += 1
                    log(f"kill {killed}/{kills}")
                    starts.append(await server.start())
                    restarted.set()
                stop_client.set()

            async def client() -> None:
                nonlocal retries
                async with httpx.AsyncClient(timeout=60) as http:
                    n = 0
                    conv = ""
                    while not stop_client.is_set():
                        if n % 3 == 0:
                            await restarted.wait()
                            try:
                                resp = await http.post(
                                    f"{server.base}/v1/conversations",
                                    headers={"Authorization": f"Bearer {key}"},
                                )
                                conv = resp.json()["conversation_id"]
                            except (httpx.HTTPError, OSError, KeyError, ValueError):
                                await asyncio.sleep(0.2)
                                continue
                        idem = f"m{n}"
                        question = QUESTIONS[n % len(QUESTIONS)]
                        first = True
                        while True:
                            await restarted.wait()
                            outcome, done = await ask(http, server.base, key, conv, question, idem)
                            outcomes[outcome] += 1
                            if not first:
                                retries += 1
                            first = False
                            if outcome == "done" and done is not None:
                                acknowledged[idem] = done["answer"]
                                break
                            await asyncio.sleep(0.2)
                        n += 1

            t0 = time.perf_counter()
            await asyncio.gather(killer(), client())
            wall = time.perf_counter() - t0
            server.stop()
        with ProcessPoolExecutor(1, mp_context=spawn) as pool:
            rows = await asyncio.get_running_loop().run_in_executor(pool, _turns, data_dir)
        by_key: dict[str, list[dict[str, Any]]] = {}
        for r in rows:
            by_key.setdefault(r["key"] or "", []).append(r)
        lost = [
            k
            for k, answer in acknowledged.items()
            if not any(r["status"] == "done" and r["answer"] == answer for r in by_key.get(k, []))
        ]
        duplicated = [k for k, rs in by_key.items() if k and len(rs) > 1]
        unfinished = [r["id"] for r in rows if r["status"] == "processing"]
        return {
            "kills": killed,
            "wall_s": round(wall, 1),
            "server_start_s_median": round(sorted(starts)[len(starts) // 2], 2),
            "messages_acknowledged": len(acknowledged),
            "keyed_retries": retries,
            "attempt_outcomes": outcomes,
            "acknowledged_lost_or_changed": len(lost),
            "keys_with_more_than_one_turn": len(duplicated),
            "turns_stored": len(rows),
            "turns_left_processing": len(unfinished),
            "turns_failed": sum(1 for r in rows if r["status"] == "failed"),
            "token_delay_s": token_delay,
            "max_gap_s": max_gap,
            "seed": seed,
        }
    finally:
        cleanup_stack(data_dir)
        shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--token-delay", type=float, default=0.05)
    parser.add_argument(
        "--max-gap",
        type=float,
        default=8.0,
        help="a kill comes 0.2 s to this many seconds after the server is up",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report(asyncio.run(run(args.kills, args.token_delay, args.max_gap, args.seed)), args.out)


if __name__ == "__main__":
    main()
