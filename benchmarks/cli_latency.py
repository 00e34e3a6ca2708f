"""How long ``documents list``, ``keys create`` and ``ask`` take from the shell: each
command starting the stores itself (no service), and beside a running service, which the
command asks instead (issue 32: at most 1 s each beside a service).

On a fresh data directory with one small document: each command is run ``--repeat`` times
beside ``convrag serve --detach`` (stopped after with ``convrag stop``) and ``--cold``
times without it. Reports wall seconds (p50, min, max) and the CPU seconds (user + system)
of the command's own process, which the other processes of a shared machine do not
inflate, with the load average before and after:

    python benchmarks/cli_latency.py --repeat 5 --cold 1 --out bench-out/cli-latency.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

EXE = str(Path(sys.executable).with_name("convrag"))

COMMANDS: dict[str, list[str]] = {
    "documents list": ["documents", "list", "-w", "bench"],
    "keys create": ["keys", "create", "-w", "bench"],
    "ask": ["ask", "How many days of annual leave do we get?", "-w", "bench"],
}
"""The commands timed, by name, on the workspace the benchmark fills."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Run ``convrag ARGS``; its wall and CPU seconds (exit on failure)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([EXE, *args], env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"convrag {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _summary(samples: list[tuple[float, float]]) -> dict[str, Any]:
    walls, cpus = [w for w, _ in samples], [c for _, c in samples]
    return {
        "wall_s": {
            "p50": round(statistics.median(walls), 3),
            "min": round(min(walls), 3),
            "max": round(max(walls), 3),
        },
        "cpu_s_p50": round(statistics.median(cpus), 3),
        "n": len(samples),
    }


def _time_all(env: dict[str, str], repeat: int) -> dict[str, Any]:
    return {
        name: _summary([_run(args, env) for _ in range(repeat)]) for name, args in COMMANDS.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per command beside a service")
    parser.add_argument("--cold", type=int, default=1, help="runs per command without a service")
    parser.add_argument("--out", type=Path, help="also write the JSON result here")
    opts = parser.parse_args()
    data_dir = Path(tempfile.mkdtemp(prefix="convrag-cli-lat-", dir="/tmp"))
    env = {**os.environ, "CONVRAG_DATA_DIR": str(data_dir)}
    result: dict[str, Any] = {"load_before": os.getloadavg()[0]}
    try:
        doc = data_dir / "leave.md"
        doc.write_text("Every employee gets 25 days of paid annual leave per year.")
        _run(["ingest", str(doc), "-w", "bench", "-q"], env)
        result["without_service"] = _time_all(env, opts.cold)
        _run(["serve", "--detach", "--port", str(_free_port())], env)
        try:
            result["beside_service"] = _time_all(env, opts.repeat)
        finally:
            _run(["stop"], env)
        result["version"] = _summary([_run(["--version"], env) for _ in range(opts.repeat)])
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
    result["load_after"] = os.getloadavg()[0]
    text = json.dumps(result, indent=2)
    print(text)
    if opts.out:
        opts.out.parent.mkdir(parents=True, exist_ok=True)
        opts.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
