"""Fit the focus model (issue 46): whether a follow-up stays on the previous answer's documents.

    CONVRAG_DATA_DIR=D python benchmarks/fit_focus.py record --data ../shared/bench/mtrag \\
        --domain clapnq --out rec-focus-mtrag-clapnq.jsonl       # and cloud, and mtrag-un
    CONVRAG_DATA_DIR=R python benchmarks/fit_focus.py record-conversations realconv-dev.json \
        --out rec-focus-realconv-dev.jsonl     # R: where that eval conversations run kept its data
    python benchmarks/fit_focus.py report rec-focus-*.jsonl        # every fit direction
    python benchmarks/fit_focus.py fit rec-focus-*.jsonl --out src/convrag/retrieval/policy.json

``record`` takes every MTRAG turn that the rules call a follow-up and that has anchors (the
passages behind the previous answer, as the graph anchors it) and judged passages, and
keeps its :func:`convrag.retrieval.focus.focus_features` and its label: whether one of its
judged passages is an anchor (the turn stays on the focus). ``report`` fits a logistic
regression (scikit-learn) on each domain and scores it on the other (and on the other set
of the same domain): log loss and AUC, beside the constant model. ``fit`` fits on every
file given and writes ``focus_model`` into the policy file.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from fit_cli import FitScript, mtrag_domain, rules_follow_up, run
from fit_not_found import in_units, probability
from sklearn.metrics import log_loss, roc_auc_score

from convrag.config import get_settings
from convrag.evaluation.mtrag import (
    history_turns,
)
from convrag.records import HistoryTurn
from convrag.retrieval.focus import FOCUS_FEATURES, focus_features
from convrag.retrieval.planning import TurnQuery
from convrag.services import open_services

Row = dict[str, Any]


async def record(data: Path, domain: str) -> list[Row]:
    rows: list[Row] = []
    async with mtrag_domain(data, domain) as (services, ev, turns, qrels):
        for turn in turns:
            gold = qrels.get(turn.task_id)
            history = history_turns(turn, ev.workspace, ev.title_of)
            if not gold or not history or not turn.prev_passages:
                continue
            query = rules_follow_up(turn.question, history)
            if query is None:
                continue
            tq = TurnQuery(
                ev.workspace,
                turn.question,
                query,
                "follow_up",
                "rules",
                history,
                history[-1]["cited_document_ids"],
            )
            stays = any(p in gold for p in turn.prev_passages)
            rows.append(
                {
                    "task_id": turn.task_id,
                    "features": focus_features(tq, services.searcher),
                    "stays": stays,
                }
            )
    return rows


async def record_conversations(report: Path) -> list[Row]:
    """The follow-ups of a conversation set's report (``convrag eval conversations
    --out``), each against the turn before it as the service answered it, labelled by
    whether it asks about the same document; the set's workspace must be in
    ``CONVRAG_DATA_DIR`` (the run that wrote the report)."""
    run = json.loads(report.read_text())
    rows: list[Row] = []
    async with open_services(get_settings()) as services:
        records = run["records"]
        for before, turn in itertools.pairwise(records):
            if turn["conversation"] != before["conversation"] or before["no_answer"]:
                continue
            if not turn["follow_up"] or not (turn["document"] and before["document"]):
                continue
            titles = list(dict.fromkeys(s["title"] for s in before["sources"] if s["title"]))
            history = [
                HistoryTurn(
                    turn_number=1,
                    question=before["question"],
                    answer=before["answer"],
                    contextualized_query=before["rewrite"],
                    entities=[],
                    cited_document_ids=["cited"],
                    cited_titles=titles,
                )
            ]
            tq = TurnQuery(
                run["workspace"],
                turn["question"],
                turn["rewrite"],
                "follow_up",
                "rules",
                history,
                ["cited"],
            )
            rows.append(
                {
                    "task_id": f"{turn['conversation']}:{turn['turn']}",
                    "features": focus_features(tq, services.searcher),
                    "stays": turn["document"] == before["document"],
                }
            )
    return rows


def load(paths: Sequence[Path]) -> list[Row]:
    rows = []
    for path in paths:
        match = re.match(r"rec-focus-(.+)-([a-z]+)\.jsonl$", path.name)
        if match is None:
            raise SystemExit(f"{path}: expected a file named rec-focus-SET-DOMAIN.jsonl")
        for line in path.read_text().splitlines():
            rows.append({**json.loads(line), "set": match[1], "domain": match[2]})
    return rows


def matrix(rows: Sequence[Row], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([[r["features"][n] for n in names] for r in rows], dtype=float)
    y = np.array([bool(r["stays"]) for r in rows], dtype=int)
    return x, y


def fit(rows: Sequence[Row], names: Sequence[str]) -> dict[str, float]:
    """The model's weights and bias in the features' own units."""
    x, y = matrix(rows, names)
    return in_units(x, y, names, balanced=False)


def judged(rows: Sequence[Row], model: dict[str, float], names: Sequence[str]) -> str:
    x, y = matrix(rows, names)
    p = probability(model, names, x)
    base = np.full(len(y), y.mean())
    auc = roc_auc_score(y, p) if 0 < y.sum() < len(y) else float("nan")
    return (
        f"{len(y)} turns, {y.mean():.2f} stay; log loss {log_loss(y, p, labels=[0, 1]):.3f} "
        f"(constant {log_loss(y, base, labels=[0, 1]):.3f}), AUC {auc:.3f}"
    )


def report(rows: list[Row], names: Sequence[str]) -> None:
    for train in sorted({r["domain"] for r in rows}):
        fitted_on = [r for r in rows if r["domain"] == train]
        if len({bool(r["stays"]) for r in fitted_on}) < 2:
            print(
                f"{train}: every follow-up {'stays' if fitted_on[0]['stays'] else 'moves'};"
                " nothing to fit"
            )
            continue
        model = fit(fitted_on, names)
        print(f"fit on {train}: {json.dumps(model)}")
        for key in sorted({(r["set"], r["domain"]) for r in rows}):
            held = [r for r in rows if (r["set"], r["domain"]) == key]
            kind = "fitted on" if key[1] == train else "held out"
            print(f"  {key[0]} {key[1]} ({kind}): {judged(held, model, names)}")


def main(argv: Sequence[str] | None = None) -> None:
    script = FitScript(
        __doc__.split("\n\n")[0],
        record,
        record_conversations,
        load,
        report,
        fit,
        FOCUS_FEATURES,
        "focus_model",
    )
    run(script, argv)


if __name__ == "__main__":
    main()
