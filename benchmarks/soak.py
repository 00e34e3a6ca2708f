"""A soak of `convrag serve`: N streaming clients for a while, then SIGTERM under load.

The service runs as in the speed suite (a child process on the ClapNQ quick workspace,
the OpenAI stub as its LLM). ``--streams`` clients each ask MTRAG conversations (three
turns each, over SSE) until ``--seconds`` have passed; the server's RSS is sampled every
``--rss-every`` seconds. At the deadline, with the clients' turns still in flight, the
server gets SIGTERM; the figure is the time until it has exited, and whether its
PostgreSQL and Milvus Lite stopped with it. Errors are non-200 answers, ``error`` events
and streams without ``done`` before the SIGTERM. RSS growth is a least-squares slope over
the second half of the run (the first half includes warm-up).

    python benchmarks/soak.py --seconds 300 --streams 16 --out bench-out/soak.json
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import signal
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ["LANGSMITH_TRACING"] = "false"

from bench_common import (
    load_conversations,
    log,
    report,
    server_process,
    stack_pids,
    stub_process,
)
from bench_server import _client, new_conversation, prepare_clapnq, sse_turn

MiB = 1024 * 1024


def _alive(pid: int | None) -> bool:
    return pid is not None and psutil.pid_exists(pid)


def _prepare(data_dir: Path) -> tuple[list[str], Any]:
    return asyncio.run(prepare_clapnq(data_dir, 2000, 300, keys=4))


async def soak(data_dir: Path, seconds: float, streams: int, rss_every: float) -> dict[str, Any]:
    # In a child process: this one must not hold the embedded servers itself, or their
    # state after the server's exit would say nothing about the server.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        keys, corpus = await asyncio.get_running_loop().run_in_executor(pool, _prepare, data_dir)
    convs = load_conversations()
    with stub_process(data_dir) as stub_url, server_process(data_dir, stub_url) as handle:
        server = psutil.Process(handle.pid)
        log(f"soak: {streams} streams for {seconds:.0f} s against pid {handle.pid}")
        deadline = time.monotonic() + seconds
        ok = errors = 0
        samples: list[tuple[float, float]] = []
        error_samples: list[str] = []

        async def client(i: int, http: Any) -> None:
            nonlocal ok, errors
            n = i
            while time.monotonic() < deadline:
                key = keys[n % len(keys)]
                conv = await new_conversation(http, handle.base_url, key)
                for q in convs[n % len(convs)][:3]:
                    if time.monotonic() >= deadline:
                        return
                    turn = await sse_turn(http, handle.base_url, key, conv, q)
                    if time.monotonic() >= deadline:
                        return  # cut by the SIGTERM, not a soak error
                    if turn.ok:
                        ok += 1
                    else:
                        errors += 1
                        if len(error_samples) < 5:
                            error_samples.append(turn.error or "?")
                n += streams

        async def sample_rss() -> None:
            start = time.monotonic()
            while time.monotonic() < deadline:
                samples.append((time.monotonic() - start, server.memory_info().rss / MiB))
                await asyncio.sleep(rss_every)

        async with _client(streams + 4) as http:
            tasks = [asyncio.create_task(client(i, http)) for i in range(streams)]
            await sample_rss()
            pids = stack_pids(handle.data_dir)
            t0 = time.perf_counter()
            server.send_signal(signal.SIGTERM)
            exited = await asyncio.to_thread(_wait, server, 60.0)
            sigterm_s = time.perf_counter() - t0
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        # The stores stop as the server's last step; give their processes a moment.
        settle = time.monotonic() + 10.0
        while any(_alive(pid) for pid in pids.values()) and time.monotonic() < settle:
            await asyncio.sleep(0.1)
        stores_s = time.perf_counter() - t0
        leftovers = {name: _alive(pid) for name, pid in pids.items()}
    half = [(t, r) for t, r in samples if t >= seconds / 2]
    slope = 0.0
    if len(half) > 2:
        slope = 60.0 * float(np.polyfit([t for t, _ in half], [r for _, r in half], 1)[0])
    return {
        "seconds": seconds,
        "streams": streams,
        "turns_ok": ok,
        "errors": errors,
        "error_samples": error_samples,
        "turns_per_s": round(ok / seconds, 2),
        "rss_mib_first": round(samples[0][1], 1) if samples else None,
        "rss_mib_last": round(samples[-1][1], 1) if samples else None,
        "rss_mib_max": round(max(r for _, r in samples), 1) if samples else None,
        "rss_slope_mib_per_min_second_half": round(slope, 2),
        "rss_mib_by_minute": [round(r, 1) for t, r in samples if int(t) % 60 < rss_every],
        "sigterm_exit_s": round(sigterm_s, 2) if exited else None,
        "stores_gone_after_sigterm_s": round(stores_s, 2),
        "stores_left_running": leftovers,
        "corpus": corpus,
    }


def _wait(proc: psutil.Process, timeout: float) -> bool:
    try:
        proc.wait(timeout)
    except psutil.TimeoutExpired:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--streams", type=int, default=16)
    parser.add_argument("--rss-every", type=float, default=5.0)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/cvb-soak"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    report(asyncio.run(soak(args.data_dir, args.seconds, args.streams, args.rss_every)), args.out)


if __name__ == "__main__":
    main()
