"""Fit the "not found" decision: one logistic regression over the named signals the merge
records for every turn, its numbers written into the retrieval policy.

    python benchmarks/fit_not_found.py report REC...      # both fit directions
    python benchmarks/fit_not_found.py fit REC... [--out src/convrag/retrieval/policy.json]

Each REC is a ``--turns`` file of ``convrag eval answers`` run with ``--set
sentence_band=1`` (every turn's sentences weighed), named ``rec-SET-DOMAIN.jsonl``:
MTRAG and MTRAG-UN, ClapNQ and Cloud, each with the other domain's first questions as
off-topic probes. A turn should be answered when MTRAG labels it ANSWERABLE or PARTIAL,
refused when UNANSWERABLE or off-topic; other labels (CONVERSATIONAL, UNDERSPECIFIED) are
not fitted on. ``report`` fits on one domain's turns and scores the other's, both ways,
beside the decisions recorded with the turns (the policy the recording ran with);
``fit`` fits on every file and writes the policy. The decision threshold is the highest
that keeps false "not found" on the fitted turns at or under ``--false-rate``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from convrag.retrieval.evidence import Signals
from convrag.retrieval.policy import load_policy, write_policy

FEATURES = tuple(f.name for f in fields(Signals) if f.name != "evidence")
"""The signals the model weighs (:class:`convrag.retrieval.evidence.Signals`)."""
ANSWER = {"ANSWERABLE", "PARTIAL"}
REFUSE = {"UNANSWERABLE", "OFFTOPIC"}

Row = dict[str, Any]


def load(paths: Sequence[Path]) -> list[Row]:
    """Every fitted turn of the files, with its domain (from the file's name)."""
    rows = []
    for path in paths:
        match = re.match(r"rec-(.+)-([a-z]+)\.jsonl$", path.name)
        if match is None:
            raise SystemExit(f"{path}: expected a file named rec-SET-DOMAIN.jsonl")
        for line in path.read_text().splitlines():
            row = json.loads(line)
            if row.get("signals") is None or row["answerability"] not in ANSWER | REFUSE:
                continue
            rows.append({**row, "set": match[1], "domain": match[2]})
    return rows


def matrix(rows: Sequence[Row]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[float(r["signals"][f]) for f in FEATURES] for r in rows])
    y = np.array([r["answerability"] in ANSWER for r in rows], dtype=int)
    return x, y


def fit(rows: Sequence[Row], false_rate: float) -> dict[str, Any]:
    """The model's weights and bias in the signals' own units, and its threshold on the
    probability that the sources hold the answer."""
    x, y = matrix(rows)
    scaler = StandardScaler().fit(x)
    model = LogisticRegression(C=1.0, class_weight="balanced", max_iter=1000)
    model.fit(scaler.transform(x), y)
    weights = model.coef_[0] / scaler.scale_
    bias = float(model.intercept_[0] - np.sum(model.coef_[0] * scaler.mean_ / scaler.scale_))
    fitted = {"weights": dict(zip(FEATURES, map(float, weights), strict=True)), "bias": bias}
    p = probability(fitted, x)
    answerable = np.sort(p[y == 1])
    allowed = int(np.floor(false_rate * len(answerable)))
    fitted["threshold"] = float(answerable[allowed]) if len(answerable) else 0.5
    return fitted


def probability(fitted: dict[str, Any], x: np.ndarray) -> np.ndarray:
    w = np.array([fitted["weights"][f] for f in FEATURES])
    return 1.0 / (1.0 + np.exp(-(x @ w + fitted["bias"])))


def scores(rows: Sequence[Row], refused: Sequence[bool]) -> dict[str, str]:
    """False "not found" of answerable turns, refused unanswerable and off-topic ones."""

    def rate(label: set[str], want: bool) -> str:
        picked = [r for r, no in zip(rows, refused, strict=True) if r["answerability"] in label]
        hits = sum(
            no == want for r, no in zip(rows, refused, strict=True) if r["answerability"] in label
        )
        return f"{hits}/{len(picked)} ({100 * hits / max(1, len(picked)):.1f} %)"

    return {
        "false not found": rate(ANSWER, True),
        "unanswerable refused": rate({"UNANSWERABLE"}, True),
        "off-topic refused": rate({"OFFTOPIC"}, True),
    }


def report(rows: list[Row], false_rate: float) -> None:
    domains = sorted({r["domain"] for r in rows})
    for train in domains:
        fitted = fit([r for r in rows if r["domain"] == train], false_rate)
        for test in domains:
            for rec_set in sorted({r["set"] for r in rows}):
                held = [r for r in rows if r["domain"] == test and r["set"] == rec_set]
                if not held:
                    continue
                x, _ = matrix(held)
                model = probability(fitted, x) < fitted["threshold"]
                recorded = [bool(r["abstained"]) for r in held]
                kind = "fitted on" if test == train else "held out"
                print(f"fit {train} -> {rec_set} {test} ({kind}), {len(held)} turns")
                print(f"  model:    {scores(held, list(model))}")
                print(f"  recorded: {scores(held, recorded)}")
        print(f"  {train} fit: {json.dumps(fitted)}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["report", "fit"])
    parser.add_argument("recordings", nargs="+", type=Path)
    parser.add_argument("--false-rate", type=float, default=0.02)
    parser.add_argument("--out", type=Path, help="the policy file to write (fit)")
    args = parser.parse_args(argv)
    rows = load(args.recordings)
    if args.command == "report":
        report(rows, args.false_rate)
        return
    fitted = fit(rows, args.false_rate)
    print(json.dumps(fitted, indent=2))
    if args.out is not None:
        policy = load_policy(args.out).with_values(
            {
                "not_found_weights": fitted["weights"],
                "not_found_bias": fitted["bias"],
                "relevance_floor": fitted["threshold"],
            }
        )
        write_policy(policy, args.out)


if __name__ == "__main__":
    main()
