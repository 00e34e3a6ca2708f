"""The HTTP service figures: ttft_overhead_ms, concurrent_32 / concurrent_64, server_rss_*.

The service runs as ``convrag serve`` (``create_app`` under uvicorn) in a child process on
127.0.0.1 with the OpenAI stub (another child process) as its LLM; this process is the
client (httpx for the SSE stream, the ``openai`` SDK for the stub's own TTFT).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
from bench_common import (
    CLAPNQ_WORKSPACE,
    Figure,
    Json,
    ServerHandle,
    ensure_clapnq,
    load_conversations,
    log,
    server_process,
    stack_pids,
    stats,
    stub_process,
)

from convrag.config import Settings
from convrag.context import Context
from convrag.services import open_services

MiB = 1024 * 1024


@dataclass
class TurnTiming:
    ok: bool
    total_ms: float
    ttft_ms: float | None = None
    rewrite_ms: float | None = None
    sources_ms: float | None = None
    classification: str | None = None
    error: str | None = None
    server_timings: dict[str, float] | None = None


async def sse_turn(
    client: httpx.AsyncClient, base: str, key: str, conv: str, question: str
) -> TurnTiming:
    """POST a message and read its SSE stream to the end, timing the events."""
    t0 = time.perf_counter()
    marks: dict[str, float] = {}
    name: str | None = None
    error: str | None = None
    done: dict[str, Any] | None = None
    classification = None
    try:
        async with client.stream(
            "POST",
            f"{base}/v1/conversations/{conv}/messages",
            json={"content": question},
            headers={"Authorization": f"Bearer {key}"},
        ) as resp:
            if resp.status_code != 200:
                body = (await resp.aread())[:200].decode(errors="replace")
                return TurnTiming(
                    False,
                    (time.perf_counter() - t0) * 1000,
                    error=f"HTTP {resp.status_code}: {body}",
                )
            async for line in resp.aiter_lines():
                if line.startswith("event: "):
                    name = line[7:].strip()
                    marks.setdefault(name, time.perf_counter())
                elif line.startswith("data: ") and name in ("error", "done", "rewrite"):
                    data = json.loads(line[6:])
                    if name == "error":
                        error = f"error event: {data}"
                    elif name == "done":
                        done = data
                    else:
                        classification = data.get("classification")
    except (httpx.HTTPError, OSError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    total = (time.perf_counter() - t0) * 1000
    if error is None and done is None:
        error = "stream ended without a done event"

    def at(event: str) -> float | None:
        return (marks[event] - t0) * 1000 if event in marks else None

    return TurnTiming(
        error is None,
        total,
        at("token"),
        at("rewrite"),
        at("sources"),
        classification,
        error,
        (done or {}).get("timings_ms"),
    )


async def new_conversation(client: httpx.AsyncClient, base: str, key: str) -> str:
    resp = await client.post(f"{base}/v1/conversations", headers={"Authorization": f"Bearer {key}"})
    resp.raise_for_status()
    return str(resp.json()["conversation_id"])


async def stub_ttft(stub_url: str, question: str, client: Any) -> float:
    """Time to the first content token of the stub itself, through the openai SDK."""
    t0 = time.perf_counter()
    stream = await client.chat.completions.create(
        model="stub-model",
        stream=True,
        messages=[
            {"role": "system", "content": "You answer from sources."},
            {"role": "user", "content": question},
        ],
    )
    first: float | None = None
    async for chunk in stream:
        if first is None and chunk.choices and chunk.choices[0].delta.content:
            first = time.perf_counter()
    assert first is not None, "the stub streamed no content"
    return (first - t0) * 1000


class RssSampler:
    """Samples the RSS of a process (and the peak) every ``interval_s`` in a thread."""

    def __init__(self, pid: int, interval_s: float = 0.05) -> None:
        self.proc = psutil.Process(pid)
        self.interval_s = interval_s
        self.peak = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                rss = self.proc.memory_info().rss
            except psutil.Error:
                return
            self.peak = max(self.peak, rss)
            self.samples += 1
            self._stop.wait(self.interval_s)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def _mem(proc: psutil.Process) -> Json:
    info = proc.memory_full_info()
    return {"rss_mib": info.rss / MiB, "pss_mib": info.pss / MiB, "uss_mib": info.uss / MiB}


def stack_memory(handle: ServerHandle) -> Json:
    """Memory of the server process and, separately, of its PostgreSQL and Milvus Lite."""
    out: Json = {"server_process": _mem(psutil.Process(handle.pid))}
    for name, pid in stack_pids(handle.data_dir).items():
        if pid is None or not psutil.pid_exists(pid):
            out[name] = None
            continue
        procs = [psutil.Process(pid)]
        procs += procs[0].children(recursive=True)
        mems = [_mem(p) for p in procs]
        out[name] = {
            "processes": len(procs),
            "rss_mib_sum": sum(m["rss_mib"] for m in mems),
            "pss_mib_sum": sum(m["pss_mib"] for m in mems),
            "uss_mib_sum": sum(m["uss_mib"] for m in mems),
        }
    out["note"] = (
        "PSS splits shared pages (e.g. PostgreSQL's shared buffers) between "
        "processes; an RSS sum counts them once per process"
    )
    return out


@contextmanager
def serving(data_dir: Path) -> Iterator[tuple[ServerHandle, str]]:
    with stub_process(data_dir) as stub_url, server_process(data_dir, stub_url) as handle:
        yield handle, stub_url


def _client(connections: int) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        timeout=httpx.Timeout(120.0),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
    )


# -- TTFT and concurrency ------------------------------------------------------------------


async def prepare_clapnq(
    data_dir: Path, passages: int, real: int, keys: int
) -> tuple[list[str], Json]:
    async with open_services(Settings(data_dir=data_dir)) as services:
        log("server: making sure the ClapNQ workspace is ingested; creating API keys")
        corpus = await ensure_clapnq(services, passages, real)
        made = [await services.db.workspaces.create_api_key(CLAPNQ_WORKSPACE) for _ in range(keys)]
    return made, corpus


async def measure_ttft(
    handle: ServerHandle, stub_url: str, key: str, samples: int, turns_per_conv: int
) -> Json:
    import openai

    convs = load_conversations()
    stub_client = openai.AsyncOpenAI(base_url=stub_url, api_key="bench-key", max_retries=0)
    stub_ms: list[float] = []
    turns: list[TurnTiming] = []
    per_turn: dict[int, list[float]] = {}
    async with _client(8) as client:
        # Warm-up: connections, the server's bm25s index, the LLM client.
        conv = await new_conversation(client, handle.base_url, key)
        for q in convs[0][:4]:
            await sse_turn(client, handle.base_url, key, conv, q)
            await stub_ttft(stub_url, q, stub_client)
        i = 0
        while len(turns) < samples:
            questions = convs[i % len(convs)][:turns_per_conv]
            i += 1
            conv = await new_conversation(client, handle.base_url, key)
            for n, q in enumerate(questions, start=1):
                stub_ms.append(await stub_ttft(stub_url, q, stub_client))
                t = await sse_turn(client, handle.base_url, key, conv, q)
                if not t.ok:
                    raise RuntimeError(f"TTFT turn failed: {t.error}")
                turns.append(t)
                per_turn.setdefault(n, []).append(t.ttft_ms or 0.0)
    await stub_client.close()
    by_class: dict[str, list[float]] = {}
    for t in turns:
        by_class.setdefault(t.classification or "?", []).append(t.ttft_ms or 0.0)
    return {
        "stub_ttft_ms": stats(stub_ms),
        "service_ttft_ms": stats([t.ttft_ms or 0.0 for t in turns]),
        "model_ms_before_first_token": stats([model_ms(t) for t in turns]),
        "service_ttft_less_model_ms": stats([(t.ttft_ms or 0.0) - model_ms(t) for t in turns]),
        "service_ttft_by_turn_ms": {str(k): stats(v) for k, v in per_turn.items()},
        "service_ttft_by_classification_ms": {k: stats(v) for k, v in by_class.items()},
        "service_time_to_rewrite_event_ms": stats([t.rewrite_ms or 0.0 for t in turns]),
        "service_time_to_sources_event_ms": stats([t.sources_ms or 0.0 for t in turns]),
        "service_turn_total_ms": stats([t.total_ms for t in turns]),
        "server_node_timings_ms": node_timings(turns),
    }


def node_timings(turns: list[TurnTiming]) -> Json:
    """Each server timing's statistics over ``turns`` (from their ``done`` events)."""
    nodes: dict[str, list[float]] = {}
    for t in turns:
        for k, v in (t.server_timings or {}).items():
            nodes.setdefault(k, []).append(v)
    return {k: stats(v) for k, v in sorted(nodes.items())}


MODEL_TIMINGS = ("rewrite_llm", "embed_query", "embed_sentences")
"""The server's timings of model work before the first token: the rewrite's LLM call, the
wait for the query's embedding, and the embedding of the sources' sentences that the
"not found" evidence weighs."""


def model_ms(turn: TurnTiming) -> float:
    """Model time a turn spent before its first token (see :data:`MODEL_TIMINGS`)."""
    timings = turn.server_timings or {}
    return sum(timings.get(k, 0.0) for k in MODEL_TIMINGS)


async def measure_concurrency(
    handle: ServerHandle, keys: list[str], n_convs: int, turns_per_conv: int, rounds: int = 1
) -> Json:
    """``n_convs`` streams at once, each asking ``rounds`` conversations one after another
    (stream i: MTRAG conversations i, i + n_convs, ...), ``turns_per_conv`` turns each."""
    convs = load_conversations()
    proc = psutil.Process(handle.pid)
    plan = [[(r * n_convs + i) % len(convs) for r in range(rounds)] for i in range(n_convs)]
    async with _client(n_convs + 8) as client:
        ids = [
            [
                await new_conversation(client, handle.base_url, keys[i % len(keys)])
                for _ in range(rounds)
            ]
            for i in range(n_convs)
        ]
        results: list[TurnTiming] = []

        async def one(i: int) -> None:
            key = keys[i % len(keys)]
            for conv_id, c in zip(ids[i], plan[i], strict=True):
                for q in convs[c][:turns_per_conv]:
                    t = await sse_turn(client, handle.base_url, key, conv_id, q)
                    results.append(t)
                    if not t.ok:
                        return

        proc.cpu_percent()
        with RssSampler(handle.pid) as sampler:
            t0 = time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(n_convs)))
            wall = time.perf_counter() - t0
        cpu = proc.cpu_percent()
    ok = [t for t in results if t.ok]
    errors = [t.error for t in results if not t.ok]
    # A conversation shorter than turns_per_conv asks all it has.
    asked = sum(min(turns_per_conv, len(convs[c])) for row in plan for c in row)
    # A retrieval over its budget (Context.retrieval_timeout_s, 3.5 s) does not fail the
    # turn: it answers without document sources. Count those turns as degraded.
    budget_ms = Context().retrieval_timeout_s * 1000 * 0.97
    degraded = [t for t in ok if (t.server_timings or {}).get("retrieve_vectors", 0) >= budget_ms]
    return {
        "retrieval_timeouts": len(degraded),
        "conversations": n_convs,
        "turns_per_conversation": turns_per_conv,
        "rounds": rounds,
        "turns_ok": len(ok),
        "errors": len(errors) + asked - len(results),
        "error_samples": errors[:5],
        "wall_s": wall,
        "turns_per_s": len(ok) / wall,
        "turn_latency_ms": stats([t.total_ms for t in ok]),
        "ttft_ms": stats([t.ttft_ms or 0.0 for t in ok]),
        "server_process_cpu_percent": cpu,
        "server_process_peak_rss_mib": sampler.peak / MiB,
        "server_node_timings_ms": node_timings(ok),
    }


async def run_service(
    data_dir: Path,
    *,
    quick: bool,
    passages: int,
    real: int,
    ttft_samples: int,
    levels: list[int],
    turns_per_conv: int,
    rounds: int,
    want_ttft: bool,
) -> list[Figure]:
    keys, corpus = await prepare_clapnq(data_dir, passages, real, keys=4)
    conc: dict[int, Json] = {}
    with serving(data_dir) as (handle, stub_url):
        startup_rss = psutil.Process(handle.pid).memory_info().rss / MiB
        log(
            f"server: up at {handle.base_url} (pid {handle.pid}, {startup_rss:.0f} MiB RSS); "
            f"{ttft_samples} sequential turns for TTFT"
        )
        seq = await measure_ttft(handle, stub_url, keys[0], ttft_samples, 3)
        for n in levels:
            log(
                f"concurrent_{n}: {n} conversations x {turns_per_conv} turns at once, "
                f"{rounds} after another"
            )
            conc[n] = await measure_concurrency(handle, keys, n, turns_per_conv, rounds)
    figures: list[Figure] = []
    if want_ttft:
        stub_p50 = seq["stub_ttft_ms"]["p50"]
        svc_p50 = seq["service_ttft_ms"]["p50"]
        own_p50 = seq["service_ttft_less_model_ms"]["p50"]
        over = own_p50 - stub_p50
        figures.append(
            Figure(
                "ttft_overhead_ms",
                over,
                "ms",
                20.0,
                "p50 ≤ 20 ms",
                baseline=stub_p50,
                met=over <= 20.0,
                ratio_override=svc_p50 / stub_p50,
                extra={
                    "service_ttft_p50": svc_p50,
                    "service_ttft_p95": seq["service_ttft_ms"]["p95"],
                    "stub_ttft_p50": stub_p50,
                    "model_ms_p50": seq["model_ms_before_first_token"]["p50"],
                    "overhead_with_model_time_p50": svc_p50 - stub_p50,
                    "overhead_p95": seq["service_ttft_less_model_ms"]["p95"]
                    - seq["stub_ttft_ms"]["p95"],
                },
                detail={
                    "corpus": corpus,
                    "mode": "quick" if quick else "full",
                    "protocol": "MTRAG ClapNQ conversations, turns 1-3 each, one turn at a "
                    "time; TTFT = POST to the first `token` SSE event, less the "
                    "model time the server reports before it (the rewrite's "
                    "LLM call, the wait for the query embedding, the "
                    "sentence embeddings of the not-found evidence); the stub's "
                    "TTFT is measured with the openai SDK right before each "
                    "turn",
                    "server_startup_rss_mib": startup_rss,
                    **seq,
                },
            )
        )
    seq_rate = 1000.0 / seq["service_turn_total_ms"]["mean"]
    for n, c in conc.items():
        figures.append(
            Figure(
                f"concurrent_{n}",
                c["turns_per_s"],
                "turns/s",
                0.0,
                "0 errors",
                baseline=seq_rate,
                met=c["errors"] == 0,
                extra={
                    "errors": c["errors"],
                    "retrieval_timeouts": c["retrieval_timeouts"],
                    "p95_turn_ms": c["turn_latency_ms"].get("p95"),
                    "p50_turn_ms": c["turn_latency_ms"].get("p50"),
                },
                detail={
                    **c,
                    "corpus": corpus,
                    "baseline_is": "turns/s of one conversation at a time (the TTFT run, "
                    "same server)",
                },
            )
        )
    return figures


# -- RSS ---------------------------------------------------------------------------------


async def run_rss(data_dir: Path, n_chunks: int, *, seed: int, quick: bool) -> Figure:
    from bench_search import WORKSPACE, ensure_synthetic

    async with open_services(Settings(data_dir=data_dir)) as services:
        log(f"server_rss: making sure {n_chunks} synthetic chunks are indexed")
        _, build = await ensure_synthetic(services, n_chunks, seed)
        key = await services.db.workspaces.create_api_key(WORKSPACE)
    convs = load_conversations()
    with serving(data_dir) as (handle, _):
        startup = stack_memory(handle)
        log(
            f"server_rss: server up ({startup['server_process']['rss_mib']:.0f} MiB); "
            "sequential turns, then 16 concurrent conversations"
        )
        with RssSampler(handle.pid) as sampler:
            async with _client(24) as client:
                conv = await new_conversation(client, handle.base_url, key)
                seq_turns: list[Json] = []
                for q in convs[1][:5]:
                    t = await sse_turn(client, handle.base_url, key, conv, q)
                    if not t.ok:
                        raise RuntimeError(f"turn failed: {t.error}")
                    seq_turns.append(
                        {
                            "total_ms": t.total_ms,
                            "retrieve_vectors_ms": (t.server_timings or {}).get("retrieve_vectors"),
                        }
                    )
                after_seq = stack_memory(handle)
                ids = [await new_conversation(client, handle.base_url, key) for _ in range(16)]

                async def one(i: int) -> bool:
                    ok = True
                    for q in convs[i % len(convs)][:2]:
                        ok = (await sse_turn(client, handle.base_url, key, ids[i], q)).ok and ok
                    return ok

                oks = await asyncio.gather(*(one(i) for i in range(16)))
            await asyncio.sleep(0.5)
            final = stack_memory(handle)
    peak = sampler.peak / MiB
    label = f"{n_chunks // 1000}k"
    return Figure(
        f"server_rss_{label}_mb",
        peak,
        "MiB",
        1536.0,
        "≤ 1536 MiB (server process)" + (" [quick: 10k chunks]" if quick else ""),
        baseline=startup["server_process"]["rss_mib"],
        met=peak <= 1536.0,
        extra={
            "final_rss_mib": final["server_process"]["rss_mib"],
            "milvus_rss_mib": (final.get("milvus") or {}).get("rss_mib_sum"),
            "postgres_pss_mib": (final.get("postgres") or {}).get("pss_mib_sum"),
        },
        detail={
            "chunks": n_chunks,
            "build": build,
            "baseline_is": "server process RSS right after startup (healthy, idle)",
            "sequential_turns": seq_turns,
            "sequential_turns_note": "the first search of a workspace loads its "
            "in-process indexes (bm25s, numpy) from Postgres inside retrieve_vectors' "
            "3.5 s timeout; a "
            "retrieve_vectors of ~3500 ms is a timeout (the turn answered without "
            "document sources)",
            "concurrent_turns_ok": all(oks),
            "rss_samples": sampler.samples,
            "at_startup": startup,
            "after_5_sequential_turns": after_seq,
            "after_16_concurrent_conversations": final,
        },
    )
