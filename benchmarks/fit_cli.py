"""What the model-fitting scripts share: the command line (``record`` an MTRAG domain,
``record-conversations`` a conversation set's report, ``report`` every fit direction,
``fit`` all files into a policy field), an MTRAG domain opened for recording, and the
rules' rewrite of a follow-up."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convrag.config import get_settings
from convrag.evaluation.mtrag import (
    MtragEvaluation,
    MtragTurn,
    domain_path,
    load_corpus,
    load_domain,
)
from convrag.records import HistoryTurn
from convrag.retrieval.policy import load_policy, write_policy
from convrag.rewriting.classify import classify
from convrag.rewriting.rules import rules_query, rules_turns
from convrag.services import Services, open_services

Row = dict[str, Any]


@asynccontextmanager
async def mtrag_domain(
    data: Path, domain: str
) -> AsyncIterator[tuple[Services, MtragEvaluation, list[MtragTurn], dict[str, Any]]]:
    """An MTRAG domain's turns and judged passages, its pool ingested into
    ``mtrag-<domain>`` if it is not there yet, and the services that searched it."""
    path = domain_path(data, domain)
    turns, qrels = load_domain(path)
    async with open_services(get_settings()) as services:
        ev = MtragEvaluation(services, f"mtrag-{path.name}")
        await ev.prepare(load_corpus(path), lambda n: None)
        yield services, ev, turns, qrels


def rules_follow_up(question: str, history: Sequence[HistoryTurn]) -> str | None:
    """The rules' rewrite of a turn the rules call a follow-up, else None."""
    if not history:
        return None
    turns = rules_turns(history)
    if classify(question, turns) != "follow_up":
        return None
    return rules_query(question, turns)[0]


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
