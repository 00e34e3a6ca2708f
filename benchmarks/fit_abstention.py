"""Fit one "not found" decision on the signals convrag records, on one domain, and test it
on the other (issue 34).

Input: two ``convrag eval answers --turns FILE`` outputs (one per domain), whose rows carry
each turn's label (ANSWERABLE, PARTIAL, UNANSWERABLE, OFFTOPIC), whether the service
abstained, and the signals it weighed (``signals``; none where it did not weigh any: a
numbered item found, or no floor). A logistic regression on the standardised signals
gives each turn a probability that "not found" is right; the threshold is the highest
that keeps false abstention on the fitting domain at or under ``--max-false`` (5 %).
Reported for each direction, beside the service's own decision on the same turns: false
abstention (answerable turns declared not found), unanswerable and off-topic abstention.

    python benchmarks/fit_abstention.py bench-out/clapnq.jsonl bench-out/cloud.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

FEATURES = ("confidence", "sentence", "rarest", "every_term", "follow_up", "bm25")
ABSTAIN = {"UNANSWERABLE", "OFFTOPIC"}


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.open() if line.strip()]


def matrix(rows: list[dict[str, Any]]) -> np.ndarray:
    return np.array([[float(r["signals"][f]) for f in FEATURES] for r in rows])


def fit(x: np.ndarray, y: np.ndarray, l2: float = 0.01, steps: int = 4000) -> np.ndarray:
    """Logistic regression by gradient descent, classes weighted to equal mass; the last
    weight is the bias."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(xb.shape[1])
    weight = np.where(y == 1, 0.5 / max(y.sum(), 1), 0.5 / max((1 - y).sum(), 1))
    for _ in range(steps):
        p = 1 / (1 + np.exp(-xb @ w))
        grad = xb.T @ (weight * (p - y)) + l2 * np.r_[w[:-1], 0]
        w -= 2.0 * grad
    return w


def rates(rows: list[dict[str, Any]], abstained: list[bool]) -> dict[str, float]:
    """False abstention, unanswerable and off-topic abstention of a set of decisions."""

    def share(label: set[str]) -> float:
        hit = [a for r, a in zip(rows, abstained, strict=True) if r["answerability"] in label]
        return round(sum(hit) / len(hit), 4) if hit else 0.0

    return {
        "false_abstention": share({"ANSWERABLE"}),
        "unanswerable_abstention": share({"UNANSWERABLE"}),
        "offtopic_abstention": share({"OFFTOPIC"}),
    }


def decide(rows: list[dict[str, Any]], model: dict[str, Any]) -> list[bool]:
    """The fitted decision: a turn whose signals were weighed abstains when the model's
    probability reaches the threshold; one without signals keeps the service's answer."""
    out: list[bool] = []
    for r in rows:
        if not r.get("signals"):
            out.append(bool(r["abstained"]))
            continue
        z = (np.array([float(r["signals"][f]) for f in FEATURES]) - model["mean"]) / model["std"]
        p = 1 / (1 + np.exp(-(z @ model["w"][:-1] + model["w"][-1])))
        out.append(bool(p >= model["threshold"]))
    return out


def train(rows: list[dict[str, Any]], max_false: float) -> dict[str, Any]:
    weighed = [r for r in rows if r.get("signals")]
    x = matrix(weighed)
    mean, std = x.mean(axis=0), x.std(axis=0) + 1e-9
    y = np.array([1.0 if r["answerability"] in ABSTAIN else 0.0 for r in weighed])
    w = fit((x - mean) / std, y)
    model: dict[str, Any] = {"mean": mean, "std": std, "w": w, "threshold": 1.0}
    for t in np.linspace(0.99, 0.01, 99):
        trial = {**model, "threshold": float(t)}
        if rates(rows, decide(rows, trial))["false_abstention"] > max_false:
            break
        model = trial
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--max-false", type=float, default=0.05)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    sets = {args.first.stem: load(args.first), args.second.stem: load(args.second)}
    report: dict[str, Any] = {}
    for fit_on, test_on in (tuple(sets), tuple(reversed(list(sets)))):
        model = train(sets[fit_on], args.max_false)
        report[f"fit {fit_on} -> test {test_on}"] = {
            "weights": dict(
                zip([*FEATURES, "bias"], np.round(model["w"], 4).tolist(), strict=True)
            ),
            "threshold": round(model["threshold"], 3),
            "fitted on": rates(sets[fit_on], decide(sets[fit_on], model)),
            "tested on": rates(sets[test_on], decide(sets[test_on], model)),
            "service on the test domain": rates(
                sets[test_on], [bool(r["abstained"]) for r in sets[test_on]]
            ),
        }
    print(json.dumps(report, indent=1))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
