"""How well the "low confidence" label marks the turns whose answer-or-"not found"
decision is likely wrong (issue 34).

Input: ``convrag eval answers --turns FILE`` outputs. A turn whose evidence lies within
the margin of the relevance floor is labelled low confidence (as the service labels it,
``convrag.retrieval.evidence.assurance``); for each margin, each label's turns are
reported with the share whose decision is wrong (abstained on an answerable turn, or
answered an unanswerable or off-topic one), and the answered answerable turns' ROUGE-L
recall and share citing a gold passage. Only rows whose signals hold ``evidence``
(recorded since session 18) are read.

    python benchmarks/confidence_label.py bench-out/ans-clapnq-turns.jsonl \\
        bench-out/ans-cloud-turns.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from convrag.retrieval.evidence import assurance
from convrag.retrieval.policy import default_policy

DEFAULT_RELEVANCE_FLOOR = default_policy().relevance_floor

ABSTAIN = {"UNANSWERABLE", "OFFTOPIC"}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    wrong = [r for r in rows if r["abstained"] != (r["answerability"] in ABSTAIN)]
    answered = [r for r in rows if not r["abstained"] and r["answerability"] == "ANSWERABLE"]
    n = max(len(answered), 1)
    return {
        "turns": len(rows),
        "wrong_decision": round(len(wrong) / max(len(rows), 1), 3),
        "answered_rougeL_recall": round(sum(r["rougeL_recall"] for r in answered) / n, 3),
        "answered_cites_gold": round(sum(r["cites_gold"] for r in answered) / n, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", type=Path, nargs="+")
    parser.add_argument("--margins", default="0.02,0.05,0.08")
    args = parser.parse_args()
    for path in args.files:
        rows = [json.loads(line) for line in path.open() if line.strip()]
        weighed = [r for r in rows if "evidence" in (r.get("signals") or {})]
        for margin in map(float, args.margins.split(",")):
            label = {
                id(r): assurance(r["signals"]["evidence"], DEFAULT_RELEVANCE_FLOOR, margin)
                for r in weighed
            }
            by = {k: summary([r for r in weighed if label[id(r)] == k]) for k in ("low", "high")}
            print(json.dumps({"file": path.name, "margin": margin, **by}))


if __name__ == "__main__":
    main()
