"""Fit the term-selection model of follow-up expansion (issue 46): which words of the
conversation join a follow-up's history query.

    python benchmarks/fit_expansion.py record --data ../shared/bench/mtrag --domain clapnq \\
        --out rec-expansion-mtrag-clapnq.jsonl                    # and cloud
    python benchmarks/fit_expansion.py report rec-expansion-*.jsonl   # every fit direction
    python benchmarks/fit_expansion.py fit rec-expansion-mtrag-*.jsonl \\
        --out src/convrag/retrieval/policy.json

``record`` takes every MTRAG follow-up (the dataset's label) with history and a rewrite
(``rewrite_llm``), and keeps each candidate term's
:func:`convrag.retrieval.expansion.term_features` and its label: whether the rewrite holds
the word (a word the message lacks). No search runs: the features are the history's own.
``report`` fits a logistic regression (scikit-learn) on each domain and scores it on the
others: the precision and recall of the terms it would add (its ``expansion_terms`` best
per turn), beside the previous question's words (what the history query added before).
``fit`` fits on every file given and writes ``expansion_model`` into the policy file. The
retrieval figures are `convrag eval mtrag` runs with the policy each direction writes
(BENCHMARKS.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from fit_cli import FitScript, Row, run
from fit_not_found import in_units, probability

from convrag.evaluation.mtrag import domain_path, history_turns, load_domain
from convrag.retrieval.expansion import EXPANSION_FEATURES, term_features
from convrag.retrieval.policy import default_policy
from convrag.text.tokens import content_terms


async def record(data: Path, domain: str) -> list[Row]:
    turns, _ = load_domain(domain_path(data, domain))
    rows: list[Row] = []
    for turn in turns:
        history = history_turns(turn, "w")
        if not history or not turn.followup or not turn.rewrite_llm:
            continue
        asked = content_terms(turn.question)
        wanted = content_terms(turn.rewrite_llm) - asked
        terms = term_features(turn.question, history)
        rows.append(
            {
                "task_id": turn.task_id,
                "terms": {w: {**f, "wanted": w in wanted} for w, f in terms.items()},
                "previous": sorted(content_terms(history[-1]["question"]) - asked),
            }
        )
    return rows


async def record_conversations(report: Path) -> list[Row]:
    raise SystemExit(f"{report}: a conversation set has no rewrites to learn terms from")


def load(paths: Sequence[Path]) -> list[Row]:
    rows = []
    for path in paths:
        match = re.match(r"rec-expansion-(.+)-([a-z]+)\.jsonl$", path.name)
        if match is None:
            raise SystemExit(f"{path}: expected a file named rec-expansion-SET-DOMAIN.jsonl")
        for line in path.read_text().splitlines():
            rows.append({**json.loads(line), "set": match[1], "domain": match[2]})
    return rows


def matrix(rows: Sequence[Row], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    terms = [f for r in rows for f in r["terms"].values()]
    x = np.array([[f[n] for n in names] for f in terms], dtype=float).reshape(-1, len(names))
    y = np.array([bool(f["wanted"]) for f in terms], dtype=int)
    return x, y


def fit(rows: Sequence[Row], names: Sequence[str]) -> dict[str, float]:
    """The model's weights and bias in the features' own units."""
    x, y = matrix(rows, names)
    return in_units(x, y, names, balanced=False)


def _share(chosen: int, right: int, wanted: int) -> str:
    precision, recall = right / max(1, chosen), right / max(1, wanted)
    f1 = 2 * precision * recall / max(1e-9, precision + recall)
    return f"precision {precision:.2f}, recall {recall:.2f}, F1 {f1:.2f}, {chosen} terms"


def judged(rows: Sequence[Row], model: dict[str, float], names: Sequence[str], most: int) -> str:
    chosen = right = wanted = 0
    before = before_right = 0
    for r in rows:
        words = list(r["terms"])
        wanted += sum(bool(f["wanted"]) for f in r["terms"].values())
        before += len(r["previous"])
        before_right += sum(bool(r["terms"].get(w, {}).get("wanted")) for w in r["previous"])
        if not words:
            continue
        x = np.array([[r["terms"][w][n] for n in names] for w in words], dtype=float)
        best = np.argsort(-probability(model, names, x), kind="stable")[:most]
        chosen += len(best)
        right += sum(bool(r["terms"][words[i]]["wanted"]) for i in best)
    return (
        f"{len(rows)} follow-ups: chosen {_share(chosen, right, wanted)}; the previous "
        f"question's words {_share(before, before_right, wanted)}"
    )


def report(rows: list[Row], names: Sequence[str]) -> None:
    most = default_policy().expansion_terms
    for train in sorted({r["domain"] for r in rows}):
        model = fit([r for r in rows if r["domain"] == train], names)
        print(f"fit on {train}: {json.dumps(model)}")
        for key in sorted({(r["set"], r["domain"]) for r in rows}):
            held = [r for r in rows if (r["set"], r["domain"]) == key]
            kind = "fitted on" if key[1] == train else "held out"
            print(f"  {key[0]} {key[1]} ({kind}): {judged(held, model, names, most)}")


def main(argv: Sequence[str] | None = None) -> None:
    script = FitScript(
        __doc__.split("\n\n")[0],
        record,
        record_conversations,
        load,
        report,
        fit,
        EXPANSION_FEATURES,
        "expansion_model",
    )
    run(script, argv)


if __name__ == "__main__":
    main()
