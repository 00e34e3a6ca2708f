"""upload_path: what keeping an upload's original costs on the upload's own path.

Times ``accept_upload`` on one text file (10 MiB by default) on the embedded stack, from
the bytes in hand to the documents recorded ``processing`` (the background ingest is
dropped: it embeds, and embedding is not what changed), and the peak growth of the
process's resident memory meanwhile (``VmHWM`` after resetting it through
``/proc/self/clear_refs``). Where the code keeps originals in the database
(``db.originals``), it also times reading one back into a file (what a ``reindex
--reread`` or a resumed upload does first), the table's size on disk, and the same
write and read through PostgreSQL large objects (``lo_put`` / ``lo_get`` a part at a
time), the alternative the store did not take.

Run it on two checkouts to compare (each with a fresh data directory)::

    PYTHONPATH=/tmp/old/src .venv/bin/python benchmarks/bench_originals.py --runs 5
    PYTHONPATH=src .venv/bin/python benchmarks/bench_originals.py --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import shutil
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from convrag.config import Settings
from convrag.ids import document_id_for
from convrag.services import Services, open_services
from convrag.uploads import accept_upload

MIB = 1024 * 1024


def text_of(size: int) -> bytes:
    """About ``size`` bytes of varied English sentences (a manual's worth of rules)."""
    lines = []
    total = 0
    i = 0
    while total < size:
        line = f"Rule {i}: staff on shift {i % 97} park on level {i % 7} of garage {i % 13}.\n"
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines).encode()[:size]


def _kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


async def measured(step: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(seconds, peak resident growth in MiB) of ``step``."""
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    rss = _kib("VmRSS")
    t0 = time.perf_counter()
    await step()
    seconds = time.perf_counter() - t0
    return seconds, (_kib("VmHWM") - rss) / 1024


async def large_objects(services: Services, data: bytes, part: int) -> tuple[float, float]:
    """Seconds to write ``data`` as a large object a part at a time, and to read it back."""
    async with services.db.pool.connection() as conn:
        t0 = time.perf_counter()
        async with conn.transaction():
            row = await (await conn.execute("SELECT lo_create(0) AS oid")).fetchone()
            assert row is not None
            oid = row["oid"]
            for offset in range(0, len(data), part):
                chunk = data[offset : offset + part]
                await conn.execute("SELECT lo_put(%s, %s, %s)", (oid, offset, chunk))
        write = time.perf_counter() - t0
        t0 = time.perf_counter()
        with tempfile.TemporaryFile() as out:
            for offset in range(0, len(data), part):
                got = await (
                    await conn.execute("SELECT lo_get(%s, %s, %s) AS b", (oid, offset, part))
                ).fetchone()
                assert got is not None
                out.write(got["b"])
        read = time.perf_counter() - t0
        await conn.execute("SELECT lo_unlink(%s)", (oid,))
    return write, read


async def run(runs: int, size: int, data_dir: Path) -> dict[str, Any]:
    data = text_of(size)
    async with open_services(Settings(data_dir=data_dir)) as services:
        services.spawn = lambda coro, **_: coro.close()  # type: ignore[method-assign]
        workspace = f"bench-{uuid.uuid4().hex[:8]}"
        stored = getattr(services.db, "originals", None)
        out: dict[str, Any] = {"size_mib": round(size / MIB, 2), "upload": [], "read_back": []}
        await accept_upload(services, workspace, "warm-up.txt", b"Starts the file reader.")
        for n in range(runs):
            name = f"manual-{n}.txt"
            out["upload"].append(
                await measured(functools.partial(accept_upload, services, workspace, name, data))
            )
            if stored is not None:
                doc = document_id_for(workspace, f"upload:{name}")
                row = await services.db.documents.get_document(workspace, doc)
                assert row is not None
                key = row["upload_path"]
                with tempfile.TemporaryDirectory() as tmp:
                    load = functools.partial(stored.load, workspace, key, Path(tmp))
                    out["read_back"].append(await measured(load))
        if stored is not None:
            from convrag.stores.originals import PART_BYTES

            async with services.db.pool.connection() as conn:
                row = await (
                    await conn.execute(
                        "SELECT pg_total_relation_size('original_parts') AS b, "
                        "(SELECT count(*) FROM original_parts) AS parts"
                    )
                ).fetchone()
            assert row is not None
            out["table_mib_per_file"] = round(row["b"] / MIB / runs, 2)
            lo = [await large_objects(services, data, PART_BYTES) for _ in range(runs)]
            out["large_objects_write_s"] = statistics.median(w for w, _ in lo)
            out["large_objects_read_s"] = statistics.median(r for _, r in lo)
    return out


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """Medians of each timed step (seconds, peak MiB)."""
    for step in ("upload", "read_back"):
        if result[step]:
            result[f"{step}_s"] = round(statistics.median(s for s, _ in result[step]), 3)
            result[f"{step}_peak_mib"] = round(statistics.median(m for _, m in result[step]), 1)
        del result[step]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mib", type=float, default=10.0)
    args = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="cvo-"))
    try:
        result = asyncio.run(run(args.runs, int(args.mib * MIB), data_dir))
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    print(json.dumps(summary(result)))


if __name__ == "__main__":
    main()
