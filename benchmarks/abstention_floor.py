"""Choose the "not found" relevance floor by measurement, fitted on one domain, tested on another.

    python benchmarks/abstention_floor.py --data ../shared/bench/mtrag --out bench-out/floor.json

For every MTRAG turn (answerable or not) the real graph runs without an LLM up to
synthesis, and its ``retrieval_confidence`` (the best cosine similarity of a retrieved
chunk to the standalone query) is recorded, beside the turn's answerability label. The
first questions of the other domains, asked against this domain's pool, are off-topic
probes: their answers are certainly absent.

For each candidate floor, abstaining below it gives: precision, recall and F1 with
UNANSWERABLE turns as the positive class against ANSWERABLE ones (PARTIAL and
CONVERSATIONAL are left out), the false-abstention rate on ANSWERABLE turns, and the
abstention rate on off-topic probes. Two fits on one domain, each scored on the others:

- ``f1``: the best F1 with false abstention <= 10 % (the issue's criterion);
- ``safe``: the highest floor with false abstention <= 2 %, the default's rule. MTRAG's
  unanswerable questions are on-topic and score like answerable ones, so F1 cannot
  separate them; what a floor can do is refuse off-topic questions without refusing
  answerable ones.

The data directory is reused (``--data-dir``, default ``bench-out/data``): the pooled
corpora are ingested once, idempotently, into workspaces ``mtrag-<domain>``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from convrag.config import Settings
from convrag.evaluation.mtrag import MtragEvaluation, MtragTurn, load_corpus
from convrag.services import open_services

GRID = [round(0.20 + 0.01 * i, 2) for i in range(56)]  # 0.20 .. 0.75
MAX_FALSE_ABSTENTION = 0.10
SAFE_FALSE_ABSTENTION = 0.02


def load_turns(path: Path) -> list[tuple[MtragTurn, str]]:
    """Every user turn with its answerability label."""
    out = []
    for line in (path / "turns.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        users = [h["text"] for h in r["history"] if h["speaker"] == "user"]
        turn = MtragTurn(
            task_id=r["task_id"],
            question=r["question"],
            rewrite_llm=r.get("rewrite_llm"),
            followup=any(m in ("Follow-up", "Clarification") for m in r.get("multi_turn") or []),
            history=r["history"],
            prev_passages=list(r.get("prev_turn_relevant_passage_ids") or []),
            all_questions=" ".join([*users, r["question"]]),
        )
        out.append((turn, (r.get("answerability") or ["ANSWERABLE"])[0]))
    return out


def scores(rows: list[dict[str, Any]], floor: float) -> dict[str, float]:
    """Abstention figures when every turn under ``floor`` abstains."""
    pos = [r for r in rows if r["label"] == "UNANSWERABLE"]
    neg = [r for r in rows if r["label"] == "ANSWERABLE"]
    off = [r for r in rows if r["label"] == "OFFTOPIC"]
    tp = sum(r["confidence"] < floor for r in pos)
    fp = sum(r["confidence"] < floor for r in neg)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / len(pos) if pos else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "floor": floor,
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "f1": round(f1, 3),
        "false_abstention_rate": round(fp / len(neg), 3) if neg else 0.0,
        "offtopic_abstention": round(sum(r["confidence"] < floor for r in off) / len(off), 3)
        if off
        else 0.0,
    }


def fit_safe(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The highest floor whose false abstention stays within the safe limit."""
    allowed = [
        s
        for s in (scores(rows, f) for f in GRID)
        if s["false_abstention_rate"] <= SAFE_FALSE_ABSTENTION
    ]
    return max(allowed, key=lambda s: s["floor"])


def fit(rows: list[dict[str, Any]]) -> dict[str, float]:
    """The floor with the best F1 whose false abstention stays within the limit."""
    allowed = [
        s
        for s in (scores(rows, f) for f in GRID)
        if s["false_abstention_rate"] <= MAX_FALSE_ABSTENTION
    ]
    return max(allowed, key=lambda s: (s["f1"], s["offtopic_abstention"], -s["floor"]))


async def collect(
    settings: Settings, data: Path, domains: list[str], probes: list[str]
) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    async with open_services(settings) as services:
        for domain in domains:
            ev = MtragEvaluation(services, f"mtrag-{domain}")
            t0 = time.perf_counter()
            await ev.prepare(load_corpus(data / domain), lambda n: None)
            print(f"{domain}: corpus ready in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            rows = []
            for turn, label in load_turns(data / domain):
                state = await ev.run_graph(turn, anchored=True, llm="none")
                rows.append(
                    {
                        "task_id": turn.task_id,
                        "label": label,
                        "confidence": float(state.get("retrieval_confidence", 0.0)),
                    }
                )
            for other in probes:
                if other == domain:
                    continue
                firsts = [t for t, _ in load_turns(data / other) if not t.history]
                for turn in firsts:
                    state = await ev.run_graph(turn, anchored=False, llm="none")
                    rows.append(
                        {
                            "task_id": turn.task_id,
                            "label": "OFFTOPIC",
                            "confidence": float(state.get("retrieval_confidence", 0.0)),
                        }
                    )
            out[domain] = rows
            print(f"{domain}: {len(rows)} turns scored", file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/bench/mtrag"))
    parser.add_argument("--domains", default="clapnq,cloud")
    parser.add_argument("--data-dir", type=Path, default=Path("bench-out/data"))
    parser.add_argument("--out", type=Path, default=Path("bench-out/abstention_floor.json"))
    args = parser.parse_args()
    domains = args.domains.split(",")
    probes = sorted(p.name for p in args.data.iterdir() if (p / "turns.jsonl").exists())
    rows = asyncio.run(
        collect(Settings(data_dir=args.data_dir.resolve()), args.data, domains, probes)
    )
    report: dict[str, Any] = {"grid": [GRID[0], GRID[-1]], "fits": {}}
    for train in domains:
        for rule, fitter in (("f1", fit), ("safe", fit_safe)):
            chosen = fitter(rows[train])
            report["fits"][f"{rule}:{train}"] = {
                "fitted": chosen,
                "tested": {d: scores(rows[d], chosen["floor"]) for d in domains if d != train},
            }
    report["rows"] = rows
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    for train, res in report["fits"].items():
        print(f"fit on {train}: {res['fitted']}")
        for d, s in res["tested"].items():
            print(f"  test on {d}: {s}")


if __name__ == "__main__":
    main()
