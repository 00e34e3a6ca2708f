"""convrag speed suite: runs the benchmarks and writes one JSON file of figures.

    python benchmarks/run.py --out results.json [--quick] [--only NAME[,NAME]]

Figures (see benchmarks/README.md for what each measures and its caveats):

  turn_overhead_ms       per-turn cost of everything but the LLM (Assistant.ask, stub LLM)
  hybrid_search_10k_ms   HybridSearcher.search at 10k synthetic chunks vs numpy brute force
  hybrid_search_100k_ms  the same at 100k chunks (skipped by --quick)
  ingest_throughput      chunks/s of ingest_documents vs the raw embedding model
  ingest_beside_chat     chunks/s of an ingest while 8 chat streams run vs the same ingest
                         alone (at least half), and the chat's p95 then vs idle (at most 2x)
  ttft_overhead_ms       time to first token added by the HTTP service over the stub's own
                         (model time, the rewrite's LLM call and the query embedding, apart)
  concurrent_16          16 streaming conversations at once: turns/s, p95, errors
  concurrent_32          32 of them
  concurrent_64          64 of them
  server_rss_100k_mb     server process RSS with 100k chunks indexed (--quick: 10k)

Aliases for --only: turn, search, ingest, ttft, concurrent, rss, service (= ttft +
concurrent). ``--beside SRC`` runs every selected group a second time on another
checkout's ``src`` directory (say, a worktree of an earlier revision), right after this
one's, and reports its figure beside each of this checkout's (the ``beside`` column).

Each benchmark gets its own embedded PostgreSQL + Milvus Lite under
--data-dir (default: a fresh /tmp/cvb-XXXXXXXX, removed at the end unless --keep-data);
every server and child process the suite starts is stopped before it exits. Progress goes
to stderr, the results table to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

# Before convrag is imported: the suite measures the embedded stack, never a configured one.
os.environ["LANGSMITH_TRACING"] = "false"
os.environ["LANGGRAPH_CLI_NO_ANALYTICS"] = "1"
# One BLAS thread: on 2 shared cores OpenBLAS's second thread makes a 10k x 384 mat-vec
# 20x slower (8 ms instead of 0.4 ms); the product's hot path does not use BLAS threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from bench_common import DROPPED_ENV, Figure, Json, cleanup_stack, log

for _var in DROPPED_ENV:
    os.environ.pop(_var, None)

FIGURES = (
    "turn_overhead_ms",
    "hybrid_search_10k_ms",
    "hybrid_search_100k_ms",
    "ingest_throughput",
    "ingest_beside_chat",
    "ttft_overhead_ms",
    "concurrent_16",
    "concurrent_32",
    "concurrent_64",
    "server_rss_100k_mb",
)
ALIASES = {
    "turn": ("turn_overhead_ms",),
    "search": ("hybrid_search_10k_ms", "hybrid_search_100k_ms"),
    "hybrid": ("hybrid_search_10k_ms", "hybrid_search_100k_ms"),
    "ingest": ("ingest_throughput", "ingest_beside_chat"),
    "ttft": ("ttft_overhead_ms",),
    "concurrent": ("concurrent_16", "concurrent_32", "concurrent_64"),
    "service": ("ttft_overhead_ms", "concurrent_16", "concurrent_32", "concurrent_64"),
    "rss": ("server_rss_100k_mb",),
}
# Data-dir subfolders; the Postgres socket path under them must stay < 107 bytes.
SUBDIRS = ("clapnq", "s10k", "s100k", "ingest", "ingest-chat")
BESIDE_DIR = "beside"
"""The data-dir subfolder of the ``--beside`` runs (each with the subfolders above)."""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description=doc.split("\n\n", 1)[0],
        epilog=doc.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--out", type=Path, help="write the results JSON here")
    parser.add_argument(
        "--quick", action="store_true", help="smaller samples, no 100k index (under 5 minutes)"
    )
    parser.add_argument("--only", help="comma-separated figure names or aliases")
    parser.add_argument(
        "--data-dir",
        type=Path,
        help="where the embedded stores live (short path; reused if it "
        "exists, so a second run skips the ingests)",
    )
    parser.add_argument(
        "--keep-data", action="store_true", help="keep the default temporary data dir"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--beside",
        type=Path,
        metavar="SRC",
        help="also run each selected group on this other checkout's src "
        "directory (PYTHONPATH), right after this one's",
    )
    parser.add_argument(
        "--pairs",
        type=int,
        default=1,
        help="with --beside: run each side this many times, alternating "
        "which goes first, and report each side's median run",
    )
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    g = parser.add_argument_group("sizes (defaults depend on --quick)")
    g.add_argument(
        "--clapnq-passages",
        type=int,
        help="ClapNQ passages in the turn/service workspace; 0 = all 12,221 "
        "(default: 2000 quick, all full)",
    )
    g.add_argument(
        "--clapnq-real",
        type=int,
        help="of those, how many are embedded with the real model (judged "
        "passages first; the rest use a hashing stand-in); -1 = all, which "
        "costs ~20 min for the full corpus (default: 300 quick, 2000 full)",
    )
    g.add_argument(
        "--conversations",
        type=int,
        help="MTRAG conversations replayed per variant; 0 = all 29 (default: 6 quick, all full)",
    )
    g.add_argument(
        "--conversations-milvus",
        type=int,
        help="conversations replayed again with dense_engine='milvus' (default: 6 quick, 10 full)",
    )
    g.add_argument("--queries", type=int, help="search queries per size (default: 80 / 200)")
    g.add_argument(
        "--ingest-passages",
        type=int,
        help="passages in the ingest sample (default: 120 quick, 400 full)",
    )
    g.add_argument("--ttft-samples", type=int, help="sequential turns for TTFT (24 / 48)")
    g.add_argument(
        "--turns-per-conversation",
        type=int,
        help="turns per concurrent conversation (default: 2 quick, 3 full)",
    )
    g.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="conversations each concurrent stream asks one after another "
        "(default: 1; more for a longer, steadier concurrency figure)",
    )
    args = parser.parse_args(argv)
    q = args.quick
    for name, quick, full in (
        ("clapnq_passages", 2000, 0),
        ("clapnq_real", 300, 2000),
        ("conversations", 6, 0),
        ("conversations_milvus", 6, 10),
        ("queries", 80, 200),
        ("ingest_passages", 120, 400),
        ("ttft_samples", 24, 48),
        ("turns_per_conversation", 2, 3),
    ):
        if getattr(args, name) is None:
            setattr(args, name, quick if q else full)
    selected: list[str] = []
    for item in (args.only or ",".join(FIGURES)).split(","):
        item = item.strip()
        names = ALIASES.get(item, (item,) if item in FIGURES else None)
        if names is None:
            parser.error(
                f"unknown figure {item!r}; use one of {', '.join(FIGURES)} or {', '.join(ALIASES)}"
            )
        selected += [n for n in names if n not in selected]
    args.selected = selected
    return args


def _skipped(reason: str) -> Json:
    return {
        "value": None,
        "unit": None,
        "target": None,
        "baseline": None,
        "met": None,
        "skipped": reason,
    }


def _bench(name: str) -> Any:
    """A benchmark module, imported when its figure runs: ``--beside`` runs this suite on
    older code, which may lack what another figure's module imports."""
    return importlib.import_module(name)


async def run_all(args: argparse.Namespace, data_dir: Path) -> dict[str, Json]:
    sel = set(args.selected)
    out: dict[str, Json] = {}

    async def guarded(names: tuple[str, ...], job: Callable[[], Awaitable[list[Figure]]]) -> None:
        t0 = time.perf_counter()
        try:
            figures = await job()
        except Exception as exc:
            traceback.print_exc()
            for n in names:
                out[n] = {**_skipped("failed"), "error": f"{type(exc).__name__}: {exc}"}
            return
        for f in figures:
            out[f.name] = f.as_json()
            out[f.name]["benchmark_s"] = round(time.perf_counter() - t0, 1)

    async def one(coro: Awaitable[Figure]) -> list[Figure]:
        return [await coro]

    if "turn_overhead_ms" in sel:
        await guarded(
            ("turn_overhead_ms",),
            lambda: one(
                _bench("bench_turns").run(
                    data_dir / "clapnq",
                    quick=args.quick,
                    passages=args.clapnq_passages,
                    real=args.clapnq_real,
                    conversations=args.conversations,
                    conversations_alt=args.conversations_milvus,
                )
            ),
        )
    service = [
        n
        for n in ("ttft_overhead_ms", "concurrent_16", "concurrent_32", "concurrent_64")
        if n in sel
    ]
    if service:
        levels = [int(n.split("_")[1]) for n in service if n.startswith("concurrent_")]
        await guarded(
            tuple(service),
            lambda: _bench("bench_server").run_service(
                data_dir / "clapnq",
                quick=args.quick,
                passages=args.clapnq_passages,
                real=args.clapnq_real,
                ttft_samples=args.ttft_samples,
                levels=levels,
                turns_per_conv=args.turns_per_conversation,
                rounds=args.rounds,
                want_ttft="ttft_overhead_ms" in sel,
            ),
        )
    sizes = [
        n
        for n, name in ((10_000, "hybrid_search_10k_ms"), (100_000, "hybrid_search_100k_ms"))
        if name in sel
    ]
    if args.quick and 100_000 in sizes:
        sizes.remove(100_000)
        out["hybrid_search_100k_ms"] = _skipped("quick mode: 10k only")
    if sizes:
        names = tuple(f"hybrid_search_{n // 1000}k_ms" for n in sizes)
        await guarded(
            names,
            lambda: _bench("bench_search").run(
                data_dir, sizes, n_queries=args.queries, seed=args.seed
            ),
        )
    if "server_rss_100k_mb" in sel:
        n = 10_000 if args.quick else 100_000
        if args.quick:
            out["server_rss_100k_mb"] = _skipped(
                "quick mode: measured at 10k chunks, see server_rss_10k_mb"
            )
        await guarded(
            (f"server_rss_{n // 1000}k_mb",),
            lambda: one(
                _bench("bench_server").run_rss(
                    data_dir / f"s{n // 1000}k", n, seed=args.seed, quick=args.quick
                )
            ),
        )
    if "ingest_throughput" in sel:
        await guarded(
            ("ingest_throughput",),
            lambda: one(
                _bench("bench_ingest").run(
                    data_dir / "ingest", passages=args.ingest_passages, seed=args.seed
                )
            ),
        )
    if "ingest_beside_chat" in sel:
        await guarded(
            ("ingest_beside_chat",),
            lambda: one(
                ingest_beside_chat(data_dir / "ingest-chat", passages=args.ingest_passages)
            ),
        )
    order = [*FIGURES, "server_rss_10k_mb"]
    return {k: out[k] for k in order if k in out}


async def ingest_beside_chat(data_dir: Path, passages: int) -> Figure:
    """Issue 32's bars for an ingest beside the chat (``benchmarks/ingest_chat.py``, 8
    streams, the ingest child at the default ``INGEST_NICE``)."""
    import ingest_chat

    if data_dir.exists():  # the same passages again would write nothing
        cleanup_stack(data_dir)
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True)
    from convrag.config import Settings

    nice = Settings().ingest_nice
    r: Any = await ingest_chat.run("process", passages, 40, 8, nice, 0, data=data_dir)
    rate_ok = r["ingest_rate_ratio"] >= 0.5
    p95_ok = r["p95_ratio"] <= 2.0
    return Figure(
        "ingest_beside_chat",
        r["ingest_chunks_per_s_beside_chat"],
        "chunks/s",
        0.5,
        "≥ 0.5x alone; chat p95 ≤ 2x idle",
        baseline=r["ingest_chunks_per_s_alone"],
        met=rate_ok and p95_ok,
        extra={"chat_p95_ratio": r["p95_ratio"]},
        detail=r,
    )


def _num(value: Any, digits: int = 1) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def table(results: dict[str, Json]) -> str:
    beside = any("beside" in r for r in results.values())
    lines = [
        "| figure | value | target | baseline | ratio | met? |" + (" beside |" if beside else ""),
        "|---|---|---|---|---|---|" + ("---|" if beside else ""),
    ]
    for name, r in results.items():
        if r.get("value") is None:
            why = r.get("error") or r.get("skipped") or "-"
            lines.append(f"| {name} | - | - | - | - | {why} |" + (" - |" if beside else ""))
            continue
        unit = r["unit"]
        value = f"{_num(r['value'])} {unit}"
        if "p95" in r:
            value += f" (p95 {_num(r['p95'])})"
        if "chat_p95_ratio" in r:
            value += f", chat p95 {_num(r['chat_p95_ratio'], 2)}x idle"
        if "errors" in r:
            value += f", {r['errors']} errors, p95 {_num(r.get('p95_turn_ms'), 0)} ms"
            if r.get("retrieval_timeouts"):
                value += f", {r['retrieval_timeouts']} retrieval timeouts"
        if r.get("milvus_engine_p50") is not None:
            value += f"; Milvus dense engine {_num(r['milvus_engine_p50'])}"
        baseline = "-" if r.get("baseline") is None else f"{_num(r['baseline'])} {unit}"
        met = {True: "yes", False: "**no**", None: "-"}[r.get("met")]
        other = ""
        if beside:
            b = r.get("beside") or {}
            other = f" {_num(b.get('value'))} {unit if b.get('value') is not None else ''} |"
        lines.append(
            f"| {name} | {value} | {r.get('target_desc', '-')} | {baseline} | "
            f"{_num(r.get('ratio'), 2)} | {met} |{other}"
        )
    return "\n".join(lines)


def meta(args: argparse.Namespace, data_dir: Path, started: float) -> Json:
    load = os.getloadavg()
    return {
        "_meta": {
            "mode": "quick" if args.quick else "full",
            "figures": args.selected,
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "duration_s": round(time.time() - started, 1),
            "host": {
                "cpus": os.cpu_count(),
                "loadavg_at_end": [round(x, 2) for x in load],
                "python": platform.python_version(),
                "platform": platform.platform(),
            },
            "versions": {
                p: version(p)
                for p in ("convrag", "langgraph", "milvus-lite", "pymilvus", "bm25s", "onnxruntime")
            },
            "data_dir": str(data_dir),
            "sizes": {
                k: getattr(args, k)
                for k in (
                    "clapnq_passages",
                    "clapnq_real",
                    "conversations",
                    "conversations_milvus",
                    "queries",
                    "ingest_passages",
                    "ttft_samples",
                    "turns_per_conversation",
                    "seed",
                )
            },
        }
    }


GROUPS: tuple[tuple[str, ...], ...] = (
    ("turn_overhead_ms",),
    ("ttft_overhead_ms", "concurrent_16", "concurrent_32", "concurrent_64"),
    ("hybrid_search_10k_ms", "hybrid_search_100k_ms"),
    ("server_rss_100k_mb",),
    ("ingest_throughput",),
    ("ingest_beside_chat",),
)


def _passthrough(argv: list[str]) -> list[str]:
    """The size options of ``argv`` (not --out/--only/--data-dir/--keep-data)."""
    out: list[str] = []
    skip = False
    for i, item in enumerate(argv):
        if skip:
            skip = False
            continue
        name = item.split("=", 1)[0]
        if name in ("--out", "--only", "--data-dir", "--child-out", "--beside", "--pairs"):
            skip = "=" not in item and i + 1 < len(argv)
            continue
        if name == "--keep-data":
            continue
        out.append(item)
    return out


def _run_group(
    args: argparse.Namespace, names: list[str], data_dir: Path, argv: list[str], src: Path | None
) -> dict[str, Json]:
    """One group of figures in a fresh interpreter, on ``src`` (PYTHONPATH) when given."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as fh:
        child_out = Path(fh.name)
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        *_passthrough(argv),
        "--only",
        ",".join(names),
        "--data-dir",
        str(data_dir),
        "--child-out",
        str(child_out),
    ]
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src), *filter(None, [env.get("PYTHONPATH")])])
    try:
        rc = subprocess.run(cmd, check=False, env=env).returncode
        if rc == 0 and child_out.stat().st_size:
            return dict(json.loads(child_out.read_text()))
        return {
            n: {**_skipped("failed"), "error": f"benchmark process exited with {rc}"} for n in names
        }
    finally:
        child_out.unlink(missing_ok=True)


def run_groups(args: argparse.Namespace, data_dir: Path, argv: list[str]) -> dict[str, Json]:
    """Each group of figures in a fresh interpreter: a process that has used gRPC (pymilvus)
    can abort when it later forks initdb for another embedded PostgreSQL; isolation also
    keeps one benchmark's memory and threads out of the next one's numbers. With
    ``--beside``, each group runs again on the other checkout, ``--pairs`` times in
    alternating order (this, other; other, this; ...), and each side reports its median
    run, the other's under each figure's ``beside``."""
    results: dict[str, Json] = {}
    for group in GROUPS:
        names = [n for n in group if n in args.selected]
        if not names:
            continue
        if args.beside is None:
            results.update(_run_group(args, names, data_dir, argv, None))
            continue
        sides: dict[str, list[dict[str, Json]]] = {"this": [], "beside": []}
        for pair in range(args.pairs):
            for side in ("this", "beside") if pair % 2 == 0 else ("beside", "this"):
                log(f"pair {pair + 1}/{args.pairs}: {side if side == 'this' else args.beside}")
                other = side == "beside"
                sides[side].append(
                    _run_group(
                        args,
                        names,
                        data_dir / BESIDE_DIR if other else data_dir,
                        argv,
                        args.beside.resolve() if other else None,
                    )
                )
        mine, theirs = _median_runs(sides["this"]), _median_runs(sides["beside"])
        results.update(mine)
        for name, figure in theirs.items():
            results.setdefault(name, _skipped("not measured"))["beside"] = {
                "src": str(args.beside),
                **figure,
            }
    order = [*FIGURES, "server_rss_10k_mb"]
    return {k: results[k] for k in order if k in results}


def _median_runs(runs: list[dict[str, Json]]) -> dict[str, Json]:
    """Each figure's run with the median value (the lower middle one of an even count),
    with every run's value under ``values``."""
    out: dict[str, Json] = {}
    for name in runs[0]:
        figures = [r[name] for r in runs if name in r]
        valued = sorted(
            (f for f in figures if f.get("value") is not None), key=lambda f: f["value"]
        )
        chosen = valued[(len(valued) - 1) // 2] if valued else figures[0]
        out[name] = {**chosen, "values": [f.get("value") for f in figures]}
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from convrag.services import install_sigterm_handler

    install_sigterm_handler()
    temp = args.data_dir is None
    data_dir = (
        Path(tempfile.mkdtemp(prefix="cvb-", dir="/tmp"))
        if temp
        else args.data_dir.expanduser().resolve()
    )
    data_dir.mkdir(parents=True, exist_ok=True)
    if len(str(data_dir)) > 40:
        print(
            f"--data-dir {data_dir} is too long: PostgreSQL's socket path must stay under "
            "107 bytes; use something like /tmp/cvb-data",
            file=sys.stderr,
        )
        return 2
    started = time.time()
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    if args.child_out is None:
        log(
            f"running {', '.join(args.selected)} ({'quick' if args.quick else 'full'}) "
            f"under {data_dir}"
        )
    results: dict[str, Json] = {}
    try:
        if args.child_out is not None:  # one group, in this process
            results = asyncio.run(run_all(args, data_dir))
            args.child_out.write_text(json.dumps(results))
            return 0
        results = run_groups(args, data_dir, argv if argv is not None else sys.argv[1:])
    finally:
        for sub in (*SUBDIRS, *(f"{BESIDE_DIR}/{sub}" for sub in SUBDIRS)):
            if (data_dir / sub).exists():
                cleanup_stack(data_dir / sub)
        if temp and not args.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)
    doc = {**results, **meta(args, data_dir, started)}
    doc["_meta"]["host"]["loadavg_at_start"] = load_at_start
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        log(f"wrote {args.out}")
    print()
    print(f"convrag speed suite, {doc['_meta']['mode']} mode, {doc['_meta']['duration_s']:.0f} s")
    print()
    print(table(results))
    failed = [k for k, v in results.items() if "error" in v]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
