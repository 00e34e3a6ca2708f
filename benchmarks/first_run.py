"""The first run as a newcomer meets it: ``scripts/run.sh`` in a fresh clone, with an empty
HOME (so no pip or uv cache) and no terminal, until the service answers ``/healthz``.

Reports the total time to a served page and the longest time the script went without
printing a line (issue 32: never 10 s), for each revision given, in one run:

    python benchmarks/first_run.py HEAD 3a0ea28 --out bench-out/first-run.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as reply:
            return int(reply.status) == 200
    except OSError:
        return False


def first_run(revision: str, limit_s: float) -> dict[str, Any]:
    """Clone ``revision``, run its ``scripts/run.sh`` and time it until it serves."""
    work = Path(tempfile.mkdtemp(prefix="convrag-first-run-"))
    clone = work / "a" / "deep" / "path" / "convrag"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", revision], check=True)
    port = _free_port()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(work / "home"), "LANG": "C.UTF-8"}
    (work / "home").mkdir()
    started = time.monotonic()
    proc = subprocess.Popen(
        ["bash", "scripts/run.sh", "--port", str(port)],
        cwd=clone,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    stamps: list[float] = [started]
    lines: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            stamps.append(time.monotonic())
            lines.append(line.rstrip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    served = None
    while time.monotonic() - started < limit_s and proc.poll() is None:
        if _answers(port):
            served = time.monotonic() - started
            break
        time.sleep(0.5)
    stamps.append(time.monotonic())
    os.killpg(proc.pid, 15)
    proc.wait(timeout=60)
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    shutil.rmtree(work, ignore_errors=True)
    return {
        "revision": revision,
        "served_s": None if served is None else round(served, 1),
        "longest_silence_s": round(max(gaps), 1),
        "lines": len(lines),
        "last_lines": lines[-5:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revisions", nargs="+")
    parser.add_argument("--limit", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    results = []
    for revision in args.revisions:
        result = first_run(revision, args.limit)
        print(json.dumps(result), flush=True, file=sys.stderr)
        results.append(result)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
