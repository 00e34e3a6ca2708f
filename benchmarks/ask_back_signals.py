"""Can cheap signals tell an underspecified turn from an answerable one (issue 45, "ask back")?

    python benchmarks/ask_back_signals.py rec-mtrag-un-clapnq.jsonl rec-mtrag-un-cloud.jsonl

Reads two ``convrag eval answers --turns`` recordings of MTRAG-UN (each turn's query and
"not found" signals, labelled by the dataset) and fits a logistic regression (scikit-learn)
on each, UNDERSPECIFIED against ANSWERABLE and PARTIAL, over named signals: demonstratives
before a noun ("this burger") and pronouns left in the query, whether the rewrite changed
the message, the query's length and the recorded "not found" signals. The threshold lets
at most 3 % of the fitted file's answerable turns be asked back; the report gives how many
underspecified and answerable turns each file would have asked back.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

_DEICTIC = re.compile(
    r"\b(?:this|these|that|those)\s+(?!is\b|was\b|are\b|were\b|the\b|a\b|an\b)[a-z]", re.I
)
_PRONOUN = re.compile(r"\b(?:it|its|they|their|them|he|his|him|she|her)\b", re.I)
_SIGNALS = ("confidence", "sentence", "coverage", "every_term", "rarest", "follow_up", "later")
KEPT = ("ANSWERABLE", "PARTIAL", "UNDERSPECIFIED")


def features(row: dict[str, Any]) -> list[float]:
    signals = row["signals"]
    if isinstance(signals, str):
        signals = ast.literal_eval(signals)
    query = row["query"]
    return [
        len(_DEICTIC.findall(query)),
        len(_PRONOUN.findall(query)),
        float(query == row["question"]),
        len(query.split()),
        *(float(signals[name]) for name in _SIGNALS),
    ]


def load(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows = [r for r in rows if r["answerability"] in KEPT and r.get("signals")]
    x = np.array([features(r) for r in rows], dtype=float)
    y = np.array([r["answerability"] == "UNDERSPECIFIED" for r in rows], dtype=int)
    return x, y


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]]
    data = {p.stem: load(p) for p in paths}
    for train, (x, y) in data.items():
        scaler = StandardScaler().fit(x)
        model = LogisticRegression(class_weight="balanced", max_iter=2000)
        model.fit(scaler.transform(x), y)
        answerable = np.sort(model.predict_proba(scaler.transform(x))[y == 0, 1])
        threshold = answerable[int(np.ceil(0.97 * len(answerable))) - 1] + 1e-9
        for name, (xt, yt) in data.items():
            asked = model.predict_proba(scaler.transform(xt))[:, 1] > threshold
            kind = "fitted on" if name == train else "held out"
            print(
                f"fit {train} -> {name} ({kind}): underspecified asked back "
                f"{int((asked & (yt == 1)).sum())}/{int(yt.sum())}, answerable asked back "
                f"{int((asked & (yt == 0)).sum())}/{int((yt == 0).sum())}"
            )


if __name__ == "__main__":
    main()
