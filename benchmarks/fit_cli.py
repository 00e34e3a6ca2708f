"""The command line the model-fitting scripts share: ``record`` (an MTRAG domain),
``record-conversations`` (a conversation set's report), ``report`` (every fit direction)
and ``fit`` (all files, written into a policy field)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convrag.retrieval.policy import load_policy, write_policy

Row = dict[str, Any]


@dataclass(frozen=True)
class FitScript:
    """What one script plugs into the shared command line."""

    description: str
    record: Callable[[Path, str], Awaitable[list[Row]]]
    record_conversations: Callable[[Path], Awaitable[list[Row]]]
    load: Callable[[Sequence[Path]], list[Row]]
    report: Callable[[list[Row], Sequence[str]], None]
    fit: Callable[[Sequence[Row], Sequence[str]], dict[str, float]]
    features: Sequence[str]
    field: str
    """The policy field ``fit --out`` writes."""


def run(script: FitScript, argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=script.description)
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--data", type=Path, default=Path("../shared/bench/mtrag"))
    rec.add_argument("--domain", required=True)
    rec.add_argument("--out", type=Path, required=True)
    conv = sub.add_parser("record-conversations")
    conv.add_argument("report", type=Path)
    conv.add_argument("--out", type=Path, required=True)
    for name in ("report", "fit"):
        p = sub.add_parser(name)
        p.add_argument("recordings", nargs="+", type=Path)
        p.add_argument("--without", default="", help="features left out (a,b,...)")
        if name == "fit":
            p.add_argument("--out", type=Path, help="the policy file to write")
    args = parser.parse_args(argv)
    if args.cmd in ("record", "record-conversations"):
        rows = asyncio.run(
            script.record(args.data, args.domain)
            if args.cmd == "record"
            else script.record_conversations(args.report)
        )
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        print(f"{len(rows)} rows", file=sys.stderr)
        return
    names = [n for n in script.features if n not in args.without.split(",")]
    rows = script.load(args.recordings)
    if args.cmd == "report":
        script.report(rows, names)
        return
    model = script.fit(rows, names)
    print(json.dumps(model, indent=2))
    if args.out is not None:
        write_policy(load_policy(args.out).with_values({script.field: model}), args.out)
