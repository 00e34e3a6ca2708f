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
import urllib.request
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


#: Each command's operation and request, as the command sends them to the service.
REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "documents list": ("documents-list", {"workspace": "bench"}),
    "keys create": ("keys-create", {"workspace": "bench"}),
    "ask": ("ask", {"workspace": "bench", "question": "How many days of annual leave?"}),
}


def _service_times(data_dir: Path, repeat: int) -> dict[str, Any]:
    """The seconds the service takes to answer each command's request (p50, min, max),
    sent as the command sends it: what a command adds to its own start beside a service."""
    record = json.loads((data_dir / "service.json").read_text())
    times: dict[str, Any] = {}
    for name, (operation, body) in REQUESTS.items():
        samples = []
        for _ in range(repeat):
            request = urllib.request.Request(
                f"{record['url']}/admin/v1/{operation}",
                data=json.dumps(body).encode(),
                headers={
                    "Authorization": f"Bearer {record['token']}",
                    "Content-Type": "application/json",
                },
            )
            start = time.perf_counter()
            with urllib.request.urlopen(request, timeout=120) as reply:
                reply.read()
            samples.append(time.perf_counter() - start)
        times[name] = {
            "p50": round(statistics.median(samples), 3),
            "min": round(min(samples), 3),
            "max": round(max(samples), 3),
        }
    return times


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
        if opts.cold:
            result["without_service"] = _time_all(env, opts.cold)
        _run(["serve", "--detach", "--port", str(_free_port())], env)
        try:
            result["beside_service"] = _time_all(env, opts.repeat)
            result["service_answer_s"] = _service_times(data_dir, opts.repeat)
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
