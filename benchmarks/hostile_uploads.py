"""Hostile uploads against `convrag serve`: replies, peak memory, and a responsive server.

`convrag serve` runs on a fresh data directory (the sample documents, an API key) with
``MAX_DECOMPRESSED_BYTES`` set by ``--max-decompressed-mib``. Each hostile file is
uploaded in turn: compression bombs in every compressed format the service reads (gzip
of one endless line, gzip of millions of tiny JSONL records, a .docx zip bomb, a PDF
whose content stream inflates to a gigabyte), a 20 MiB line without a space, deeply
nested HTML, and hostile file names. A sampler reads the server's RSS every 20 ms and
`/healthz` is probed every 100 ms. Figures per file: the status, the detail, the peak
RSS above the RSS before it, and the slowest `/healthz`. Bars: no 5xx, and peak RSS
bounded by the configured cap.

    python benchmarks/hostile_uploads.py --out bench-out/hostile-uploads.json
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import io
import multiprocessing
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import psutil
from bench_common import log, report, server_process, stub_process
from bench_server import RssSampler
from kill_restart import prepare_samples

MiB = 1 << 20


def _deflate_zeros(total: int, wbits: int) -> bytes:
    """``total`` zero bytes, deflated in one stream (``wbits`` picks gzip or zlib framing)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, wbits)
    block = bytes(16 * MiB)
    parts = [comp.compress(block) for _ in range(total // len(block))]
    return b"".join([*parts, comp.flush()])


def gzip_endless_line(limit: int) -> bytes:
    """Members of 1 GiB of zeros (no newline), concatenated up to ``limit`` bytes."""
    member = _deflate_zeros(1024 * MiB, 31)
    return member * max(1, limit // len(member))


def gzip_tiny_records(_: int) -> bytes:
    """Millions of valid one-word JSONL records: small once decompressed, many objects."""
    line = b'{"_id": "a", "text": "a"}\n'
    return gzip.compress(line * (300 * MiB // len(line)), compresslevel=9)


def docx_bomb(_: int) -> bytes:
    """A .docx-shaped zip whose one part declares and holds 4 GiB of zeros."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open("word/document.xml", "w", force_zip64=True) as part:
            block = bytes(16 * MiB)
            for _ in range(256):
                part.write(block)
    return buf.getvalue()


def pdf_bomb(_: int) -> bytes:
    """A one-page PDF whose content stream inflates to 1 GiB."""
    stream = _deflate_zeros(1024 * MiB, 15)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def endless_word(limit: int) -> bytes:
    return b"a" * (limit - 1024)


def nested_html(_: int) -> bytes:
    depth = 200_000
    return b"<html><body>" + b"<div>" * depth + b"deep text" + b"</div>" * depth + b"</body>"


PLAIN = b"A short and harmless note about annual leave.\n"

#: (case, file name, content builder taking MAX_FILE_BYTES)
CASES: list[tuple[str, str, Callable[[int], bytes]]] = [
    ("gzip bomb: one endless line", "bomb.jsonl.gz", gzip_endless_line),
    ("gzip of 12M tiny JSONL records", "records.jsonl.gz", gzip_tiny_records),
    ("docx zip bomb (4 GiB part)", "bomb.docx", docx_bomb),
    ("pdf bomb (1 GiB content stream)", "bomb.pdf", pdf_bomb),
    ("one word at the upload limit", "word.txt", endless_word),
    ("html nested 200,000 deep", "deep.html", nested_html),
    ("300-character file name", "n" * 296 + ".txt", lambda _: PLAIN),
    ("path traversal in the name", "../../../etc/cron.d/x.txt", lambda _: PLAIN),
    ("control characters in the name", "a\x01b\x7f.txt", lambda _: PLAIN),
    ("no extension", "README", lambda _: PLAIN),
]


class HealthProbe:
    """``/healthz`` every 100 ms until ``done``; ``slowest`` is the longest reply."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.done = False
        self.slowest = 0.0

    async def run(self) -> None:
        async with httpx.AsyncClient(timeout=30) as http:
            while not self.done:
                t0 = time.perf_counter()
                await http.get(f"{self.base}/healthz")
                self.slowest = max(self.slowest, time.perf_counter() - t0)
                await asyncio.sleep(0.1)


async def _settled(
    http: httpx.AsyncClient,
    base: str,
    headers: dict[str, str],
    document_id: str,
    timeout_s: float = 300.0,
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        doc = (await http.get(f"{base}/v1/documents/{document_id}", headers=headers)).json()
        if doc.get("status") != "processing" or time.monotonic() > deadline:
            return dict(doc)
        await asyncio.sleep(0.2)


async def run(data_dir: Path, max_decompressed_mib: int, only: str | None = None) -> dict[str, Any]:
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        key = await asyncio.get_running_loop().run_in_executor(pool, prepare_samples, data_dir)
    cap = max_decompressed_mib * MiB
    env = {"MAX_DECOMPRESSED_BYTES": str(cap)}
    results: list[dict[str, Any]] = []
    with (
        stub_process(data_dir) as stub_url,
        server_process(data_dir, stub_url, extra_env=env) as handle,
    ):
        server = psutil.Process(handle.pid)
        headers = {"Authorization": f"Bearer {key}"}
        limit = 20 * MiB
        async with httpx.AsyncClient(timeout=600) as http:
            for case, name, build in CASES:
                if only and only not in case:
                    continue
                content = await asyncio.to_thread(build, limit)
                before = server.memory_info().rss
                probe = HealthProbe(handle.base_url)
                with RssSampler(handle.pid, 0.02) as rss:
                    prober = asyncio.create_task(probe.run())
                    t0 = time.perf_counter()
                    resp = await http.post(
                        f"{handle.base_url}/v1/documents",
                        headers=headers,
                        files={"file": (name, content, "application/x")},
                    )
                    body = resp.json()
                    final = body
                    if resp.status_code == 202:
                        final = await _settled(http, handle.base_url, headers, body["id"])
                    elapsed = time.perf_counter() - t0
                    probe.done = True
                    await prober
                await asyncio.sleep(2.0)
                after = server.memory_info().rss
                detail = str(final.get("detail") or final.get("error") or final.get("status"))
                results.append(
                    {
                        "case": case,
                        "upload_mib": round(len(content) / MiB, 2),
                        "status": resp.status_code,
                        "final": final.get("status") if resp.status_code == 202 else None,
                        "detail": detail[:160],
                        "seconds": round(elapsed, 2),
                        "peak_rss_over_before_mib": round((rss.peak - before) / MiB, 1),
                        "rss_kept_mib": round((after - before) / MiB, 1),
                        "slowest_healthz_ms": round(probe.slowest * 1000, 1),
                    }
                )
                log(
                    f"{case}: {resp.status_code} in {elapsed:.1f} s, "
                    f"peak +{(rss.peak - before) / MiB:.0f} MiB"
                )
        healthy = (await httpx.AsyncClient().get(f"{handle.base_url}/healthz")).status_code
    return {
        "max_decompressed_mib": max_decompressed_mib,
        "max_file_mib": 20,
        "cases": results,
        "server_errors": sum(1 for r in results if r["status"] >= 500),
        "peak_rss_over_before_mib_max": max(r["peak_rss_over_before_mib"] for r in results),
        "healthz_after": healthy,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--max-decompressed-mib",
        type=int,
        default=200,
        help="the server's MAX_DECOMPRESSED_BYTES, in MiB (default 200)",
    )
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--only", help="run the cases whose name contains this text")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cv-hostile-") as tmp:
        report(
            asyncio.run(run(args.data_dir or Path(tmp), args.max_decompressed_mib, args.only)),
            args.out,
        )


if __name__ == "__main__":
    main()
