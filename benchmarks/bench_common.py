"""Shared parts of the speed suite: results, statistics, data, and the processes it starts.

Everything a benchmark starts is stopped here: the OpenAI stub and the HTTP service run as
child processes inside context managers that terminate them, and :func:`cleanup_stack`
stops an embedded PostgreSQL / Milvus Lite left behind under a data directory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from convrag.documents.base import SourceDocument
from convrag.stores.embedded import pid_alive
from convrag.testing.openai_stub import hashed_embedding

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
MTRAG = Path(os.environ.get("CONVRAG_BENCH_DATA", REPO.parent / "shared" / "bench")) / "mtrag"
CLAPNQ = MTRAG / "clapnq"
CLAPNQ_WORKSPACE = "clapnq"

Json = dict[str, Any]


# -- results ---------------------------------------------------------------------------


@dataclass
class Figure:
    """One figure of the suite, as written to the JSON file."""

    name: str
    value: float | None
    unit: str
    target: float | None
    target_desc: str
    baseline: float | None = None
    met: bool | None = None
    ratio_override: float | None = None
    extra: Json = field(default_factory=dict)
    detail: Json = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        if self.ratio_override is not None:
            return self.ratio_override
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline

    def as_json(self) -> Json:
        out: Json = {
            "value": _round(self.value),
            "unit": self.unit,
            "target": self.target,
            "target_desc": self.target_desc,
            "baseline": _round(self.baseline),
            "ratio": _round(self.ratio, 3),
            "met": self.met,
        }
        out.update({k: _round(v) for k, v in self.extra.items()})
        out["detail"] = _round_tree(self.detail)
        return out


def _round(value: Any, digits: int = 2) -> Any:
    if isinstance(value, float):
        return round(value, digits)
    return value


def _round_tree(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _round_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_round_tree(v) for v in value]
    if isinstance(value, float | np.floating):
        return round(float(value), 3)
    if isinstance(value, np.integer):
        return int(value)
    return value


def stats(values: Sequence[float]) -> Json:
    """p50 / p95 / mean / min / max / n of a sample (milliseconds or anything else)."""
    if not values:
        return {"n": 0}
    arr = np.asarray(values, dtype=np.float64)
    return {
        "p50": float(np.percentile(arr, 50)),
        "p95": float(np.percentile(arr, 95)),
        "mean": float(arr.mean()),
        "min": float(arr.min()),
        "max": float(arr.max()),
        "n": int(arr.size),
    }


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def report(result: Json, out: Path | None) -> None:
    """Print a script's JSON result, and write it to ``out`` when given."""
    text = json.dumps(result, indent=2)
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n")


# -- data ------------------------------------------------------------------------------


def load_corpus() -> list[Json]:
    with gzip.open(CLAPNQ / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_turns() -> list[Json]:
    with open(CLAPNQ / "turns.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_conversations() -> list[list[str]]:
    """Each MTRAG conversation's user questions, in order (conversations in file order)."""
    by_conv: dict[str, list[tuple[int, str]]] = {}
    for row in load_turns():
        by_conv.setdefault(row["conversation_id"], []).append((int(row["turn"]), row["question"]))
    return [[q for _, q in sorted(turns)] for turns in by_conv.values()]


def load_questions() -> list[str]:
    return [row["question"] for row in load_turns()]


def to_document(rec: Json) -> SourceDocument:
    """A corpus record as ``load_path`` would read it from a .jsonl file."""
    meta = {k: v for k, v in rec.items() if k not in ("_id", "title", "text")}
    return SourceDocument(str(rec["_id"]), rec.get("title") or None, str(rec["text"]), meta)


def clapnq_documents(total: int, real: int) -> tuple[list[SourceDocument], list[SourceDocument]]:
    """(embedded for real, padding) ClapNQ passages: judged passages first, then file order.

    ``total`` <= 0 means the whole corpus; ``real`` < 0 means all of ``total``.
    """
    corpus = load_corpus()
    judged: set[str] = set()
    for row in load_turns():
        judged.update(row.get("gold_passage_ids") or [])
        judged.update(p["id"] for p in row.get("judged_passages") or [])
    first = [r for r in corpus if r["_id"] in judged]
    rest = [r for r in corpus if r["_id"] not in judged]
    ordered = first + rest
    if total > 0:
        ordered = ordered[:total]
    cut = len(ordered) if real < 0 else min(real, len(ordered))
    return [to_document(r) for r in ordered[:cut]], [to_document(r) for r in ordered[cut:]]


class HashedEmbedder:
    """A fast stand-in embedder (feature hashing) used only to pad a corpus to full size.

    Query-time embedding always uses the real model; this only fills the index with
    rows of the right count and text so that search cost matches the full corpus. It
    goes by the real model's name, so the workspace's model record accepts its rows.
    """

    dim = 384

    def __init__(self, name: str) -> None:
        self.name = name

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.asarray([hashed_embedding(t, self.dim) for t in texts], dtype=np.float32)


def padded_services(services: Any) -> Any:
    """The services with the stand-in embedder (for padding ingests only), for ingest's
    bulk embedding too."""
    from convrag.embeddings import ThreadEmbedder

    hashed = HashedEmbedder(services.embedder.name)
    return dataclasses.replace(services, embedder=hashed, bulk=ThreadEmbedder(hashed))


async def ensure_clapnq(services: Any, total: int, real: int) -> Json:
    """Ingest the ClapNQ passages into the ``clapnq`` workspace (idempotent); returns facts."""
    from convrag.ingest import ingest_documents

    real_docs, pad_docs = clapnq_documents(total, real)
    t0 = time.perf_counter()
    rep_real = await ingest_documents(services, CLAPNQ_WORKSPACE, real_docs)
    t1 = time.perf_counter()
    rep_pad = await ingest_documents(padded_services(services), CLAPNQ_WORKSPACE, pad_docs)
    t2 = time.perf_counter()
    chunks = len(await services.db.documents.chunk_texts(CLAPNQ_WORKSPACE))
    return {
        "passages": len(real_docs) + len(pad_docs),
        "passages_real_embeddings": len(real_docs),
        "passages_hashed_padding": len(pad_docs),
        "chunks": chunks,
        "newly_written_chunks": rep_real.chunks_written + rep_pad.chunks_written,
        "ingest_s": round(t1 - t0, 1),
        "padding_ingest_s": round(t2 - t1, 1),
    }


# -- search engines ---------------------------------------------------------------------


def services_with_dense_engine(services: Any, engine: str) -> Any:
    """The services with a searcher on another dense engine ('numpy' or 'milvus'), same
    stores, embedder, keyword engine and settings; a fresh searcher rebuilds its
    in-process indexes on its first search."""
    from convrag.retrieval.search import HybridSearcher
    from convrag.services import keyword_engine_for

    searcher = HybridSearcher(
        services.db,
        services.index,
        services.embedder,
        keyword_engine=keyword_engine_for(services.settings, services.index),
        dense_engine=engine,  # type: ignore[arg-type]
        policy=services.policy,
    )
    return dataclasses.replace(services, searcher=searcher)


def settle(index: Any, workspace: str, *, min_s: float = 2.0, cap_s: float = 30.0) -> float:
    """After a flush Lite builds its index in the background: search until timings settle.

    Returns the seconds waited."""
    vec = np.zeros(index.dim, dtype=np.float32)
    vec[0] = 1.0
    t0 = time.perf_counter()
    times: list[float] = []
    while time.perf_counter() - t0 < cap_s:
        a = time.perf_counter()
        index.dense_search(workspace, vec, 40)
        times.append(time.perf_counter() - a)
        best = min(times)
        if time.perf_counter() - t0 >= min_s and all(x < 2 * best for x in times[-3:]):
            break
        time.sleep(0.2)
    return time.perf_counter() - t0


# -- processes -------------------------------------------------------------------------


def free_port() -> int:
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port != 2024:
            return port


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the URLs and keys that would leave the embedded
    stack, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update({"LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1"})
    env.update(extra)
    return env


DROPPED_ENV = (
    "DATABASE_URL",
    "MILVUS_URI",
    "MILVUS_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SERPER_API_KEY",
    "SERPER_BASE_URL",
    "LLM_MODEL",
    "EMBEDDING_MODEL",
    "KEYWORD_ENGINE",
    "CONVRAG_DATA_DIR",
    "RATE_LIMIT_PER_MINUTE",
    "MILVUS_COLLECTION",
    "DENSE_ENGINE",
)


def _stop_process(proc: subprocess.Popen[Any], timeout: float) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log(f"process {proc.pid} ignored SIGTERM for {timeout:.0f} s; killing it")
            proc.kill()
            proc.wait(10)


@contextlib.contextmanager
def stub_process(log_dir: Path, *, token_delay_s: float = 0.0) -> Iterator[str]:
    """The OpenAI stub (``bench_stub.py``) in a child process; yields its base URL."""
    log_dir.mkdir(parents=True, exist_ok=True)
    err = open(log_dir / "stub.log", "ab")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(
        [
            sys.executable,
            str(BENCH_DIR / "bench_stub.py"),
            "--port",
            str(free_port()),
            "--token-delay",
            str(token_delay_s),
        ],
        stdout=subprocess.PIPE,
        stderr=err,
        stdin=subprocess.DEVNULL,
        env=clean_env(),
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if "listening on" not in line:
            raise RuntimeError(f"the OpenAI stub did not start: {line!r}; see {log_dir}/stub.log")
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        _stop_process(proc, 10)
        err.close()


@dataclass
class ServerHandle:
    base_url: str
    pid: int
    data_dir: Path


@contextlib.contextmanager
def server_process(
    data_dir: Path,
    stub_url: str,
    *,
    startup_timeout_s: float = 120.0,
    extra_env: dict[str, str] | None = None,
) -> Iterator[ServerHandle]:
    """``convrag serve`` (FastAPI + uvicorn from ``create_app``) on ``data_dir`` in a child
    process, with the stub as its LLM and the rate limit lifted; stopped with SIGTERM."""
    import httpx

    port = free_port()
    env = clean_env(
        CONVRAG_DATA_DIR=str(data_dir),
        LLM_MODEL="openai:stub-model",
        OPENAI_BASE_URL=stub_url,
        OPENAI_API_KEY="bench-key",
        RATE_LIMIT_PER_MINUTE="100000000",
    )
    env.update(extra_env or {})
    exe = Path(sys.executable).with_name("convrag")
    cmd = (
        [str(exe)]
        if exe.exists()
        else [sys.executable, "-c", "from convrag.cli import main; main()"]
    )
    out = open(data_dir / "server.log", "ab")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(
        [*cmd, "serve", "--host", "127.0.0.1", "--port", str(port)],
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=str(data_dir),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"convrag serve exited with {proc.returncode}; see {data_dir}/server.log"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"convrag serve not healthy after {startup_timeout_s:.0f} s")
            time.sleep(0.2)
        yield ServerHandle(base, proc.pid, data_dir)
    finally:
        _stop_process(proc, 45)
        out.close()
        cleanup_stack(data_dir)


def stack_pids(data_dir: Path) -> dict[str, int | None]:
    """Pids of the embedded PostgreSQL postmaster and Milvus Lite server of ``data_dir``."""
    pids: dict[str, int | None] = {"postgres": None, "milvus": None}
    with contextlib.suppress(OSError, ValueError, IndexError):
        pids["postgres"] = int((data_dir / "pg" / "postmaster.pid").read_text().split()[0])
    with contextlib.suppress(OSError, ValueError, KeyError, json.JSONDecodeError):
        pids["milvus"] = int(json.loads((data_dir / "milvus" / "server.json").read_text())["pid"])
    return pids


def cleanup_stack(data_dir: Path) -> list[str]:
    """Stop a PostgreSQL / Milvus Lite that this suite started under ``data_dir`` and that
    outlived its holders (a crash or a kill). Returns what it had to stop."""
    stopped: list[str] = []
    pids = stack_pids(data_dir)
    for name, sig in (("milvus", signal.SIGTERM), ("postgres", signal.SIGINT)):
        pid = pids[name]
        if pid is None or not pid_alive(pid):
            continue
        os.kill(pid, sig)  # SIGINT: PostgreSQL's fast shutdown
        for _ in range(200):
            if not pid_alive(pid):
                break
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
        stopped.append(f"{name}:{pid}")
    if stopped:
        (data_dir / "pg" / ".handle_pids.json").unlink(missing_ok=True)
        (data_dir / "milvus" / "server.json").unlink(missing_ok=True)
        log(f"stopped leftover embedded servers under {data_dir}: {stopped}")
    return stopped
