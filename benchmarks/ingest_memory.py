"""The ingest child's memory and speed on a large text upload: its peak RSS and chunks/s.

For each run, `convrag serve` starts on a fresh data directory (the sample documents, an
API key) and a text file of ``--mib`` MiB (ClapNQ passages, repeated with a marker when
the pool runs out) is uploaded. Every 0.25 s the RSS of the server's ``multiprocessing``
children is read (the ingest child is the larger; the reader child loads no model), and
every second the document's ``n_chunks``. A run ends when the document is ready or after
``--seconds``. The rate is the chunks embedded from the first kept slice to the end of
the run, per second. Runs alternate between the ``--sources`` (a ``src`` directory each:
the service runs from it), ``--runs`` times each, so that both meet the same machine.

    python benchmarks/ingest_memory.py --mib 10 --seconds 240 --runs 2 \\
        --sources /work/main/src,src --out bench-out/ingest-memory.json
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import multiprocessing
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psutil
from bench_common import CLAPNQ, log, report, server_process, stub_process
from kill_restart import prepare_samples

MiB = 1 << 20


def text_of(mib: int) -> bytes:
    """``mib`` MiB of ClapNQ passages, one paragraph each."""
    parts: list[bytes] = []
    size, copy = 0, 0
    while size < mib * MiB:
        copy += 1
        with gzip.open(CLAPNQ / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                text = json.loads(line)["text"].strip()
                part = (f"(Copy {copy}.) " if copy > 1 else "") + text + "\n\n"
                parts.append(part.encode())
                size += len(parts[-1])
                if size >= mib * MiB:
                    break
    return b"".join(parts)


def child_rss(pid: int) -> int:
    """The largest RSS among ``pid``'s ``multiprocessing`` children (bytes; 0: none)."""
    best = 0
    try:
        children = psutil.Process(pid).children()
    except psutil.Error:
        return 0
    for child in children:
        try:
            if "multiprocessing" in " ".join(child.cmdline()):
                best = max(best, child.memory_info().rss)
        except psutil.Error:
            continue
    return best


async def one_run(src: str, content: bytes, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cv-ingest-mem-") as tmp:
        data_dir = Path(tmp)
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            key = await asyncio.get_running_loop().run_in_executor(pool, prepare_samples, data_dir)
        with (
            stub_process(data_dir) as stub_url,
            server_process(data_dir, stub_url, extra_env={"PYTHONPATH": src}) as handle,
        ):
            headers = {"Authorization": f"Bearer {key}"}
            peak, progress = 0, []
            async with httpx.AsyncClient(timeout=120) as http:
                resp = await http.post(
                    f"{handle.base_url}/v1/documents",
                    files={"file": ("large.txt", content, "text/plain")},
                    headers=headers,
                )
                assert resp.status_code == 202, resp.text
                doc = f"{handle.base_url}/v1/documents/{resp.json()['id']}"
                t0 = time.monotonic()
                next_poll = t0
                row: dict[str, Any] = {}
                while time.monotonic() - t0 < seconds:
                    peak = max(peak, child_rss(handle.pid))
                    if time.monotonic() >= next_poll:
                        row = (await http.get(doc, headers=headers)).json()
                        progress.append((time.monotonic() - t0, row["n_chunks"]))
                        next_poll += 1.0
                        if row["status"] != "processing":
                            break
                    await asyncio.sleep(0.25)
    started = [(t, n) for t, n in progress if n > 0]
    rate = None
    if len(started) >= 2 and started[-1][0] > started[0][0]:
        rate = (started[-1][1] - started[0][1]) / (started[-1][0] - started[0][0])
    return {
        "src": src,
        "status": row.get("status"),
        "chunks_total": row.get("chunks_total"),
        "chunks_done": row.get("n_chunks"),
        "seconds": round(progress[-1][0], 1) if progress else None,
        "chunks_per_s": round(rate, 2) if rate else None,
        "ingest_child_peak_rss_mib": round(peak / MiB, 1),
    }


async def run(sources: list[str], runs: int, mib: int, seconds: float) -> dict[str, Any]:
    content = text_of(mib)
    results = []
    for i in range(runs):
        for src in sources:
            log(f"run {i + 1}: {src}")
            results.append(await one_run(src, content, seconds))
            log(json.dumps(results[-1]))
    return {"upload_mib": round(len(content) / MiB, 2), "runs": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=240.0, help="the longest a run lasts")
    parser.add_argument("--runs", type=int, default=2, help="runs of each source, alternating")
    parser.add_argument("--sources", default="src", help="src directories, comma-separated")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sources = [str(Path(s).resolve()) for s in args.sources.split(",") if s.strip()]
    report(asyncio.run(run(sources, args.runs, args.mib, args.seconds)), args.out)


if __name__ == "__main__":
    main()
