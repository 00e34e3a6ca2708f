"""Fit the multi-query fusion's weights (issue 31): on one MTRAG domain, tested on the other.

    CONVRAG_DATA_DIR=bench-out/data python benchmarks/fit_fusion.py record \\
        --domain clapnq --out bench-out/fusion-clapnq.json
    CONVRAG_DATA_DIR=bench-out/data-cloud python benchmarks/fit_fusion.py record \\
        --domain cloud --out bench-out/fusion-cloud.json
    python benchmarks/fit_fusion.py fit bench-out/fusion-clapnq.json bench-out/fusion-cloud.json

``record`` searches every judged turn's candidate queries once, as ``retrieve_vectors``
searches them (the pool ingested into ``mtrag-<domain>`` if it is not there yet; the
dataset's own history, the last answer anchored to the passages behind it), and keeps each
list's chunk ids: ``last`` (the message without history, as ``convrag_lastturn``), ``raw``
(the message, history not mixed), ``history`` (the message, the previous question mixed
into the dense query), ``glue`` (the message and the previous question as one query,
mixed: what the rules' old "carried" query searched), ``rewrite`` (the gated rules rewrite,
mixed) and ``ungated`` (the rewrite before the gate), and the anchored documents.

``fit`` replays the wing's fusion of planned queries (:func:`convrag.retrieval.fusion.fuse`)
over a grid of weights (the raw list's weight is 1: only ratios matter), picks the best
mean of all-turn and follow-up R@5 on the first file, and reports it on the second, then
the reverse. The fused chunks are cut as the
evaluation cuts them (40 sources, 10 passages).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from convrag.config import get_settings
from convrag.evaluation.metrics import retrieval_scores
from convrag.evaluation.mtrag import (
    MtragEvaluation,
    MtragTurn,
    domain_path,
    history_turns,
    load_corpus,
    load_domain,
)
from convrag.records import previous_question
from convrag.retrieval.fusion import RankedList, fuse
from convrag.retrieval.policy import RetrievalPolicy, default_policy
from convrag.retrieval.search import SearchResult
from convrag.rewriting.classify import classify
from convrag.rewriting.gate import SWITCHES, is_continuation
from convrag.rewriting.rules import rules_query, rules_turns
from convrag.services import open_services
from convrag.text.tokens import content_words, tokenize

DEPTH, SOURCES, WANTED = 10, 40, 80
RRF_K = default_policy().rrf_k
"""As ``convrag eval mtrag`` runs the graph: 10 passages scored, top_k 40, 80 hits a list."""


async def _lists(ev: MtragEvaluation, turn: MtragTurn, policy: RetrievalPolicy) -> dict[str, Any]:
    """The candidate lists of one turn (chunk id, passage id), and what the turn is."""
    ws = ev.workspace
    history = history_turns(turn, ws, ev.title_of)
    search = ev.services.searcher.search

    async def one(text: str, mixed: bool) -> list[list[str]]:
        hits = await search(
            ws,
            text,
            top_k=WANTED,
            context_query=previous_question(history) if mixed else None,
            context_weight=policy.history_weight if mixed else 0.0,
            feedback_weight=policy.feedback_weight,
        )
        return [[h.chunk_id, ev.passage_of.get(h.document_id, "")] for h in hits]

    row: dict[str, Any] = {"task_id": turn.task_id, "followup": turn.followup}
    row["last"] = await one(turn.question, False)
    if not history:
        return row
    turns = rules_turns(history)
    kind = classify(turn.question, turns)
    row["classification"] = kind
    rewrite, rejected = (turn.question, None)
    ungated = turn.question
    if kind == "follow_up":
        rewrite, rejected = rules_query(turn.question, turns)
        ungated, _ = rules_query(turn.question, turns, ["gate"])
        row["anchors"] = sorted(set(history[-1]["cited_document_ids"]))
    row |= {"rewrite_text": rewrite, "ungated_text": ungated, "rejected": rejected}
    row["raw_words"] = bool(content_words(tokenize(turn.question))) and not is_continuation(
        turn.question
    )
    row["raw"] = row["last"]
    row["history"] = await one(turn.question, True)
    row["glue"] = await one(f"{turn.question} {previous_question(history)}", True)
    if rewrite.strip() != turn.question.strip():
        row["rewrite"] = await one(rewrite, True)
    if ungated.strip() != turn.question.strip():
        row["ungated"] = await one(ungated, True)
    if kind == "follow_up":
        row["without"] = {}
        for rule in SWITCHES:
            text, _ = rules_query(turn.question, turns, [rule])
            if text != rewrite:
                same = text.strip() == turn.question.strip()
                row["without"][rule] = None if same else await one(text, True)
    return row


async def record(data: Path, domain: str) -> dict[str, Any]:
    path = domain_path(data, domain)
    turns, qrels = load_domain(path)
    async with open_services(get_settings()) as services:
        ev = MtragEvaluation(services, f"mtrag-{path.name}")
        await ev.prepare(load_corpus(path), lambda n: None)
        anchors = {}
        rows = []
        for i, turn in enumerate(turns):
            row = await _lists(ev, turn, services.policy)
            anchors.update({d: ev.passage_of.get(d, "") for d in row.get("anchors", [])})
            rows.append(row)
            if i % 50 == 0:
                print(f"{domain}: {i}/{len(turns)}", file=sys.stderr)
    return {"domain": path.name, "qrels": qrels, "anchor_passages": anchors, "turns": rows}


Weights = tuple[float, float, float, str, bool, str]
"""rewrite, history, anchor weights (raw is 1), the history list of a follow-up
(``history`` or ``glue``), whether the gate runs, and what a turn the rules call
standalone searches when it has history: ``mixed`` (the history list alone, as before
issue 31), ``raw`` (the raw list alone) or ``fused`` (both, at the same weights)."""


def _hits(pairs: Sequence[Sequence[str]]) -> list[SearchResult]:
    return [SearchResult(c, p, "", 0.0) for c, p in pairs]


def _passages(pairs: Sequence[Sequence[str]]) -> list[str]:
    return list(dict.fromkeys(p for _, p in pairs[:SOURCES]))[:DEPTH]


def _key(row: Mapping[str, Any], w: Weights) -> tuple[Any, ...]:
    """The part of ``w`` that can change ``row``'s ranking (a cache key)."""
    w_hist, alone = w[1], w[5]
    if "raw" not in row:
        return ()
    if row["classification"] != "follow_up":
        return (alone, w_hist if alone == "fused" else None)
    return w[:5]


def fused(
    row: Mapping[str, Any],
    w: Weights,
    anchor_passages: Mapping[str, str],
    off: str | None = None,
) -> list[str]:
    """The passages of one turn's fusion under ``w`` (with rule ``off`` switched off), as
    the evaluation scores them."""
    if "raw" not in row:
        return _passages(row["last"])
    w_rw, w_hist, w_anchor, hist_list, gate, alone = w
    if row["classification"] != "follow_up":
        if alone != "fused":
            return _passages(row["history" if alone == "mixed" else "raw"])
        hist_list = "history"
    rewrite = row.get("rewrite" if gate else "ungated")
    if off is not None and off in row.get("without", {}):
        rewrite = row["without"][off]
    lists = []
    if rewrite is not None:
        lists.append(RankedList("rewrite", _hits(rewrite), w_rw))
    if row["raw_words"] or rewrite is None:
        lists.append(RankedList("raw", _hits(row["raw"]), 1.0))
    lists.append(RankedList("history", _hits(row[hist_list]), w_hist))
    if len(lists) == 1 or not any(q.weight > 0 for q in lists):
        # as the service plans (retrieval.planning.plan_queries): a lone list, or the
        # first when every weight is 0, searches at weight 1
        lists = [RankedList(lists[0].name, lists[0].hits, 1.0)]
    anchors = [anchor_passages[d] for d in row.get("anchors", []) if d in anchor_passages]
    out = fuse(lists, k=RRF_K, anchor_document_ids=anchors, anchor_weight=w_anchor)
    return list(dict.fromkeys(f.hit.document_id for f in out[:SOURCES]))[:DEPTH]


_MEMO: dict[tuple[Any, ...], float] = {}


def score(run: Mapping[str, Any], w: Weights | None, off: str | None = None) -> tuple[float, float]:
    """R@5 over all turns and over follow-ups (the dataset's label); ``None``: last turn."""
    qrels = run["qrels"]
    alls, follow = [], []
    for row in run["turns"]:
        changed = off if off in row.get("without", {}) else None
        key = (run["domain"], row["task_id"], None if w is None else _key(row, w), changed)
        if key not in _MEMO:
            ranked = (
                _passages(row["last"])
                if w is None
                else fused(row, w, run["anchor_passages"], changed)
            )
            _MEMO[key] = retrieval_scores(ranked, qrels[row["task_id"]])["R@5"]
        alls.append(_MEMO[key])
        if row["followup"]:
            follow.append(_MEMO[key])
    return sum(alls) / len(alls), sum(follow) / len(follow)


GRID: list[Weights] = list(
    itertools.product(
        (0.0, 0.5, 1.0, 1.5, 2.0, 3.0),
        (0.0, 0.5, 1.0, 1.5, 2.0, 3.0),
        (0.0, 0.25, 0.5, 1.0, 1.5, 2.0),
        ("history", "glue"),
        (True, False),
        ("mixed", "raw", "fused"),
    )
)


def fit(first: dict[str, Any], second: dict[str, Any]) -> None:
    for fit_on, test_on in ((first, second), (second, first)):
        scored = sorted(((sum(score(fit_on, w)) / 2, w) for w in GRID), key=lambda x: (-x[0], x[1]))
        print(f"fit on {fit_on['domain']}, top 5 (mean of all / follow-up R@5):")
        for s, w in scored[:5]:
            print(f"  {w}: {s:.4f}")
        best = scored[0][1]
        for run in (fit_on, test_on):
            base, mine = score(run, None), score(run, best)
            print(
                f"  {run['domain']}: last turn {base[0]:.3f} / {base[1]:.3f}, "
                f"fused {mine[0]:.3f} / {mine[1]:.3f} "
                f"(gain {mine[0] - base[0]:+.3f} / {mine[1] - base[1]:+.3f})"
            )


def joint(first: dict[str, Any], second: dict[str, Any]) -> None:
    """The weights with the best mean over both files (the defaults), and what each file
    gets with them."""
    scored = sorted(((sum(score(first, w)) + sum(score(second, w))) / 4, w) for w in GRID)
    scored.sort(key=lambda x: (-x[0], x[1]))
    print("fit on both, top 5:")
    for s, w in scored[:5]:
        print(f"  {w}: {s:.4f}")
    for run in (first, second):
        base, mine = score(run, None), score(run, scored[0][1])
        print(
            f"  {run['domain']}: last turn {base[0]:.3f} / {base[1]:.3f}, "
            f"fused {mine[0]:.3f} / {mine[1]:.3f}"
        )


def rules(runs: Sequence[dict[str, Any]], w: Weights) -> None:
    """Each switch off in turn, at weights ``w``: R@5 all / follow-ups per domain, and
    how many turns' rewrites it changes."""
    print(f"rules at {w} (R@5 all / follow-up; turns changed):")
    for off in (None, *SWITCHES):
        cells = []
        for run in runs:
            n = sum(off in row.get("without", {}) for row in run["turns"])
            a, f = score(run, w, off)
            cells.append(f"{run['domain']} {a:.3f} / {f:.3f} ({n})")
        print(f"  {off or 'all on':14} " + "; ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--data", type=Path, default=Path("../shared/bench/mtrag"))
    rec.add_argument("--domain", required=True)
    rec.add_argument("--out", type=Path, required=True)
    fitp = sub.add_parser("fit")
    fitp.add_argument("files", type=Path, nargs=2)
    rulep = sub.add_parser("rules")
    rulep.add_argument("files", type=Path, nargs="+")
    rulep.add_argument("--weights", required=True, help="e.g. 1,1,0.5,history,true,mixed")
    args = parser.parse_args()
    if args.cmd == "record":
        run = asyncio.run(record(args.data, args.domain))
        args.out.write_text(json.dumps(run))
    elif args.cmd == "fit":
        runs = [json.loads(f.read_text()) for f in args.files]
        fit(*runs)
        joint(*runs)
    else:
        rw, hist, anchor, lst, gate, alone = args.weights.split(",")
        w: Weights = (float(rw), float(hist), float(anchor), lst, gate == "true", alone)
        rules([json.loads(f.read_text()) for f in args.files], w)


if __name__ == "__main__":
    main()
