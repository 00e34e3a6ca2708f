"""Fit the "not found" decision: one logistic regression over the named features of the
signals the merge records for every turn (the cosines read on the workspace's null), its
weights and threshold written into the retrieval policy.

    python benchmarks/fit_not_found.py report REC...      # every leave-one-domain-out direction
    python benchmarks/fit_not_found.py fit REC... [--out src/convrag/retrieval/policy.json]
    python benchmarks/fit_not_found.py band REC...        # which sentence_band changes nothing
    python benchmarks/fit_not_found.py calibrations REC...  # the null read other ways

Each REC is a ``--turns`` file of ``convrag eval answers`` run with ``--set
sentence_band=1`` (every turn's sentences weighed), named ``rec-SET-DOMAIN.jsonl``:
MTRAG and MTRAG-UN, ClapNQ and Cloud, each with the other domain's first questions as
off-topic probes. A turn should be answered when MTRAG labels it ANSWERABLE or PARTIAL,
refused when UNANSWERABLE or off-topic; other labels (CONVERSATIONAL, UNDERSPECIFIED) are
not fitted on. ``report`` fits on one domain's turns (both sets) and scores the other
domain's, both ways, beside the decisions recorded with the turns; ``--without`` leaves
model features out and ``--with`` adds others (each switched alone measures what it
earns). ``fit`` fits on
every file and writes the policy. The threshold is the highest probability that keeps
false "not found" on the fitted turns at or under ``--false-rate``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from convrag.retrieval.evidence import Signals, answer_features
from convrag.retrieval.policy import default_policy, load_policy, write_policy

ANSWER = {"ANSWERABLE", "PARTIAL"}
REFUSE = {"UNANSWERABLE", "OFFTOPIC"}

Row = dict[str, Any]
Featurize = Callable[[Signals], dict[str, float]]
SIGNALS = [f.name for f in fields(Signals) if f.name != "null_spread"]


MODEL_FEATURES = (
    "confidence",
    "sentence",
    "rarest",
    "rarest_later",
    "coverage",
    "every_term",
    "follow_up",
    "later",
)
"""The features the shipped model weighs, of :func:`answer_features`. Left out, each
measured (BENCHMARKS.md): the margin, the paragraph, the dense/keyword agreement and
whether the keyword list found anything take MTRAG's corpus shape (a margin of 0.08 on
thousands of passages is 0.5 on a workspace of ten chunks) and refuse plain answers of
small workspaces; the cosines above the workspace's null lose in both fit directions."""


def chosen(add: Sequence[str], drop: Sequence[str]) -> Featurize:
    """:func:`answer_features` restricted to :data:`MODEL_FEATURES` plus ``add`` less
    ``drop`` (a feature switched on or off alone, to measure what it earns)."""
    known = answer_features(Signals(**dict.fromkeys(SIGNALS, 0.0), null_spread=1.0))
    unknown = (set(add) | set(drop)) - set(known)
    if unknown:
        raise SystemExit(f"no feature {', '.join(sorted(unknown))}; they are {', '.join(known)}")
    names = [n for n in known if (n in MODEL_FEATURES or n in add) and n not in drop]
    return lambda signals: {n: v for n, v in answer_features(signals).items() if n in names}


KINDS = {
    "off_topic": "OFFTOPIC",
    "unanswerable": "UNANSWERABLE",
    "underspecified": "UNDERSPECIFIED",
}
"""A conversation set's turn kinds as MTRAG's answerability labels (others: answerable)."""


def _set_turns(report: dict[str, Any]) -> list[Row]:
    """The turns of a ``convrag eval conversations --out`` report as recorded turns."""
    return [
        {
            "answerability": KINDS.get(r["kind"], "ANSWERABLE"),
            "abstained": r["no_answer"],
            "signals": r.get("signals"),
        }
        for r in report["records"]
    ]


def load(paths: Sequence[Path]) -> list[Row]:
    """Every fitted turn of the files, with its set and domain (from the file's name):
    ``rec-SET-DOMAIN.jsonl`` (``convrag eval answers --turns``) or ``rec-SET-DOMAIN.json``
    (``convrag eval conversations --out``, its set's turns labelled by kind)."""
    rows = []
    for path in paths:
        match = re.match(r"rec-(.+)-([a-z]+)\.jsonl?$", path.name)
        if match is None:
            raise SystemExit(f"{path}: expected a file named rec-SET-DOMAIN.jsonl or .json")
        if path.suffix == ".json":
            turns = _set_turns(json.loads(path.read_text()))
        else:
            turns = [json.loads(line) for line in path.read_text().splitlines()]
        for row in turns:
            if row.get("signals") is None or row["answerability"] not in ANSWER | REFUSE:
                continue
            rows.append({**row, "set": match[1], "domain": match[2]})
    return rows


def matrix(rows: Sequence[Row], featurize: Featurize) -> tuple[list[str], np.ndarray, np.ndarray]:
    named = {f.name for f in fields(Signals)}
    feats = [
        featurize(Signals(**{k: v for k, v in r["signals"].items() if k in named})) for r in rows
    ]
    names = list(feats[0])
    x = np.array([[f[n] for n in names] for f in feats])
    y = np.array([r["answerability"] in ANSWER for r in rows], dtype=int)
    return names, x, y


def fit(rows: Sequence[Row], false_rate: float, featurize: Featurize) -> dict[str, Any]:
    """The model's weights and bias in the features' own units, and its threshold on the
    probability that the sources hold the answer."""
    names, x, y = matrix(rows, featurize)
    fitted: dict[str, Any] = {"model": in_units(x, y, names, balanced=True)}
    p = probability(fitted["model"], names, x)
    answerable = np.sort(p[y == 1])
    allowed = int(np.floor(false_rate * len(answerable)))
    fitted["threshold"] = round(float(answerable[allowed]) - 1e-6, 6) if len(answerable) else 0.5
    return fitted


def in_units(
    x: np.ndarray, y: np.ndarray, names: Sequence[str], *, balanced: bool
) -> dict[str, float]:
    """A logistic regression fitted on standardised features, its weights and ``bias``
    given back in the features' own units (a feature that never varies weighs 0)."""
    scaler = StandardScaler().fit(x)
    scale = np.where(scaler.scale_ > 0, scaler.scale_, 1.0)
    model = LogisticRegression(
        C=1.0, class_weight="balanced" if balanced else None, max_iter=2000
    ).fit((x - scaler.mean_) / scale, y)
    weights = model.coef_[0] / scale
    bias = float(model.intercept_[0] - np.sum(model.coef_[0] * scaler.mean_ / scale))
    return {
        "bias": round(bias, 6),
        **{n: round(float(w), 6) for n, w in zip(names, weights, strict=True)},
    }


def probability(model: dict[str, float], names: Sequence[str], x: np.ndarray) -> np.ndarray:
    w = np.array([model[n] for n in names])
    return 1.0 / (1.0 + np.exp(-(x @ w + model["bias"])))


def scores(rows: Sequence[Row], refused: Sequence[bool]) -> dict[str, str]:
    """False "not found" of answerable turns, refused unanswerable and off-topic ones."""

    def rate(label: set[str], want: bool) -> str:
        picked = [no for r, no in zip(rows, refused, strict=True) if r["answerability"] in label]
        hits = sum(no == want for no in picked)
        return f"{hits}/{len(picked)} ({100 * hits / max(1, len(picked)):.1f} %)"

    return {
        "false not found": rate(ANSWER, True),
        "unanswerable refused": rate({"UNANSWERABLE"}, True),
        "off-topic refused": rate({"OFFTOPIC"}, True),
    }


def report(
    rows: list[Row], false_rate: float, featurize: Featurize, *, held_out_only: bool = False
) -> None:
    domains = sorted({r["domain"] for r in rows})
    for train in domains:
        fitted = fit([r for r in rows if r["domain"] == train], false_rate, featurize)
        for test in domains:
            if held_out_only and test == train:
                continue
            for rec_set in sorted({r["set"] for r in rows}):
                held = [r for r in rows if r["domain"] == test and r["set"] == rec_set]
                if not held:
                    continue
                names, x, _ = matrix(held, featurize)
                refused = probability(fitted["model"], names, x) < fitted["threshold"]
                kind = "fitted on" if test == train else "held out"
                print(f"fit {train} -> {rec_set} {test} ({kind}), {len(held)} turns")
                print(f"  model:    {scores(held, list(refused))}")
                if not held_out_only:
                    print(f"  recorded: {scores(held, [bool(r['abstained']) for r in held])}")
        if not held_out_only:
            print(f"  {train} fit: {json.dumps(fitted)}")


def band(rows: Sequence[Row], featurize: Featurize) -> None:
    """For each ``sentence_band``, how many turns of each set would skip weighing their
    sentences under the policy's model, and how many of those decisions would change (the
    recordings must hold every turn's sentences: ``--set sentence_band=1``)."""
    policy = default_policy()
    model, threshold = policy.answer_model, policy.answer_threshold
    for width in (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4):
        cells = []
        for name in sorted({f"{r['set']} {r['domain']}" for r in rows}):
            held = [r for r in rows if f"{r['set']} {r['domain']}" == name]
            names, x, _ = matrix(held, featurize)
            unweighed = x.copy()
            unweighed[:, names.index("sentence")] = x[:, names.index("confidence")]
            p, p0 = probability(model, names, x), probability(model, names, unweighed)
            skip = np.abs(p0 - threshold) > width
            changed = int(np.sum(skip & ((p0 >= threshold) != (p >= threshold))))
            cells.append(f"{name} {int(skip.sum())}/{len(held)} skipped, {changed} changed")
        print(f"band {width}: " + "; ".join(cells))


CALIBRATIONS = {
    "z": lambda cosine, s: (cosine - s.null_mean) / max(s.null_spread, 0.02),
    "share": lambda cosine, s: (
        0.5 * (1 + math.erf((cosine - s.null_mean) / max(s.null_spread, 0.02) / math.sqrt(2)))
    ),
    "ratio": lambda cosine, s: cosine / max(s.null_mean, 0.05),
}
"""Other readings of a cosine against the workspace's null (beside ``_above_null``): in
spreads above its mean, the share of a normal null below it, and its ratio to the mean."""


def calibrations(rows: list[Row], false_rate: float) -> None:
    """The held-out directions with the model's two cosines read against the workspace's
    null each way (in place of the raw cosines, and beside them)."""
    model = chosen([], [])
    for name, read in CALIBRATIONS.items():
        for beside in (False, True):

            def featurize(
                s: Signals, read: Any = read, beside: bool = beside, name: str = name
            ) -> dict[str, float]:
                raw = model(s)
                read_ = {f"{k}_{name}": read(raw[k], s) for k in ("confidence", "sentence")}
                if not beside:
                    del raw["confidence"], raw["sentence"]
                return {**raw, **read_}

            print(f"--- {name}{' beside the raw cosines' if beside else ''}")
            report(rows, false_rate, featurize, held_out_only=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["report", "fit", "band", "calibrations"])
    parser.add_argument("recordings", nargs="+", type=Path)
    parser.add_argument("--false-rate", type=float, default=0.02)
    parser.add_argument(
        "--without", default="", metavar="NAMES", help="model features left out (a,b,...)"
    )
    parser.add_argument(
        "--with", dest="also", default="", metavar="NAMES", help="other features weighed too"
    )
    parser.add_argument("--out", type=Path, help="the policy file to write (fit)")
    args = parser.parse_args(argv)
    rows = load(args.recordings)
    featurize = chosen(
        [n for n in args.also.split(",") if n], [n for n in args.without.split(",") if n]
    )
    if args.command == "report":
        report(rows, args.false_rate, featurize)
        return
    if args.command == "band":
        band(rows, featurize)
        return
    if args.command == "calibrations":
        calibrations(rows, args.false_rate)
        return
    fitted = fit(rows, args.false_rate, featurize)
    print(json.dumps(fitted, indent=2))
    if args.out is not None:
        policy = load_policy(args.out).with_values(
            {"answer_model": fitted["model"], "answer_threshold": fitted["threshold"]}
        )
        write_policy(policy, args.out)


if __name__ == "__main__":
    main()
