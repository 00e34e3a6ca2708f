"""Fit the multi-query fusion's weights (issue 31): on one MTRAG domain, tested on the other.

    CONVRAG_DATA_DIR=bench-out/data python benchmarks/fit_fusion.py record \\
        --domain clapnq --out bench-out/fusion-clapnq.json
    CONVRAG_DATA_DIR=bench-out/data-cloud python benchmarks/fit_fusion.py record \\
        --domain cloud --out bench-out/fusion-cloud.json
    python benchmarks/fit_fusion.py fit bench-out/fusion-clapnq.json bench-out/fusion-cloud.json \\
        [--test MTRAG-UN-FILES] [--objective margin] [--out src/convrag/retrieval/policy.json]

``record`` searches every judged turn's candidate queries once, as ``retrieve_vectors``
searches them (the pool ingested into ``mtrag-<domain>`` if it is not there yet; the
dataset's own history, the last answer anchored to the passages behind it), and keeps each
list's chunk ids: ``last`` (the message without history, as ``convrag_lastturn``), ``raw``
(the message, history not mixed), ``history`` (the message, the previous question mixed
into the dense query), ``glue`` (the history query as served, mixed: the message and the
words the policy's expansion model chooses, or the previous question), ``rewrite`` (the
gated rules rewrite, mixed) and ``ungated`` (the rewrite before the gate), and the
anchored documents.

``fit`` replays the wing's fusion of planned queries (:func:`convrag.retrieval.fusion.fuse`,
the raw message's first hit as a list of its own, as :func:`convrag.retrieval.candidates.
fuse_planned` adds it) over a grid of weights (the raw list's weight is 1: only ratios
matter), picks the best objective on the first file and reports it on the second, then the
reverse. The objective is the mean of all-turn R@5 and the follow-ups' R@5, nDCG@5 and R@1:
the top of the list counts, not only the top five. ``--objective margin`` maximises
instead the smallest clearance of the follow-ups' bars against the raw last turn (R@5 at
least +.03, nDCG@5 and R@1 not below it): the fit that leaves the most room on the
domain it sees, so that a held-out domain's smaller gains still clear them. ``--out``
writes the joint fit's weights into a policy file. The history list, the gate and what a
standalone turn searches are fixed as served (``glue``, on, ``mixed``; the ``rules``
command still replays the others). The fused chunks are cut as the evaluation cuts them
(40 sources, 10 passages). Several files after ``--test`` are reported at each fit too
(the MTRAG-UN sets).
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

from fit_cli import mtrag_domain

from convrag.evaluation.metrics import retrieval_scores
from convrag.evaluation.mtrag import (
    MtragEvaluation,
    MtragTurn,
    domain_path,
    history_turns,
)
from convrag.records import previous_question
from convrag.retrieval.candidates import with_raw_top
from convrag.retrieval.fusion import RankedList, fuse
from convrag.retrieval.planning import TurnQuery, history_query
from convrag.retrieval.policy import RetrievalPolicy, default_policy, load_policy, write_policy
from convrag.retrieval.search import SearchResult
from convrag.rewriting.classify import classify
from convrag.rewriting.gate import SWITCHES, is_continuation
from convrag.rewriting.rules import rules_query, rules_turns
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
    # the history query as served: the message and the expansion model's words (or the
    # previous question when the policy has no expansion model)
    served = TurnQuery(ws, turn.question, rewrite, kind, "rules", history)
    row["glue"] = await one(history_query(served, policy), True)
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
    async with mtrag_domain(data, domain) as (services, ev, turns, qrels):
        anchors = {}
        rows = []
        for i, turn in enumerate(turns):
            row = await _lists(ev, turn, services.policy)
            anchors.update({d: ev.passage_of.get(d, "") for d in row.get("anchors", [])})
            rows.append(row)
            if i % 50 == 0:
                print(f"{domain}: {i}/{len(turns)}", file=sys.stderr)
    name = domain_path(data, domain).name
    return {"domain": name, "qrels": qrels, "anchor_passages": anchors, "turns": rows}


Weights = tuple[float, float, float, str, bool, str, float]
"""rewrite, history, anchor weights (raw is 1), the history list of a follow-up
(``history`` or ``glue``), whether the gate runs, what a turn the rules call standalone
searches when it has history: ``mixed`` (the history list alone, as before issue 31),
``raw`` (the raw list alone) or ``fused`` (both, at the same weights), and the weight of
the raw list's first hit as a list of its own (``raw_top_weight``)."""


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
    return w[:5] + w[6:]


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
    w_rw, w_hist, w_anchor, hist_list, gate, alone, w_top = w
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
    lists = with_raw_top(lists, w_top)
    anchors = [anchor_passages[d] for d in row.get("anchors", []) if d in anchor_passages]
    out = fuse(lists, k=RRF_K, anchor_document_ids=anchors, anchor_weight=w_anchor)
    return list(dict.fromkeys(f.hit.document_id for f in out[:SOURCES]))[:DEPTH]


_MEMO: dict[tuple[Any, ...], dict[str, float]] = {}


def scores(
    run: Mapping[str, Any], w: Weights | None, off: str | None = None
) -> dict[str, dict[str, float]]:
    """R@1, R@5 and nDCG@5 over all turns (``all``) and over follow-ups (``followup``, the
    dataset's label); ``w`` None: the last turn alone."""
    qrels = run["qrels"]
    alls, follow = [], []
    for row in run["turns"]:
        if row["task_id"] not in qrels:
            continue
        changed = off if off in row.get("without", {}) else None
        key = (run["domain"], row["task_id"], None if w is None else _key(row, w), changed)
        if key not in _MEMO:
            ranked = (
                _passages(row["last"])
                if w is None
                else fused(row, w, run["anchor_passages"], changed)
            )
            got = retrieval_scores(ranked, qrels[row["task_id"]])
            _MEMO[key] = {m: got[m] for m in ("R@1", "R@5", "nDCG@5")}
        alls.append(_MEMO[key])
        if row["followup"]:
            follow.append(_MEMO[key])

    def mean(rows: list[dict[str, float]]) -> dict[str, float]:
        return {m: sum(r[m] for r in rows) / max(1, len(rows)) for m in ("R@1", "R@5", "nDCG@5")}

    return {"all": mean(alls), "followup": mean(follow)}


def score(run: Mapping[str, Any], w: Weights | None, off: str | None = None) -> tuple[float, float]:
    """R@5 over all turns and over follow-ups; ``None``: last turn."""
    got = scores(run, w, off)
    return got["all"]["R@5"], got["followup"]["R@5"]


def objective(run: Mapping[str, Any], w: Weights) -> float:
    """What ``fit`` maximises: the mean of all-turn R@5 and the follow-ups' R@5, nDCG@5
    and R@1."""
    got = scores(run, w)
    f = got["followup"]
    return (got["all"]["R@5"] + f["R@5"] + f["nDCG@5"] + f["R@1"]) / 4


MIN_R5_GAIN = 0.03
"""The follow-ups' R@5 gain over the last turn the ``margin`` objective asks for."""


def margin(run: Mapping[str, Any], w: Weights) -> float:
    """The ``margin`` objective: how far the follow-ups clear the done-when of every
    metric against the raw last turn (R@5 at least :data:`MIN_R5_GAIN` above it, nDCG@5
    and R@1 not below it), the smallest of the three; the mean objective breaks ties."""
    base, mine = scores(run, None)["followup"], scores(run, w)["followup"]
    gains = (
        mine["R@5"] - base["R@5"] - MIN_R5_GAIN,
        mine["nDCG@5"] - base["nDCG@5"],
        mine["R@1"] - base["R@1"],
    )
    return min(gains) + 1e-3 * objective(run, w)


OBJECTIVES = {"mean": objective, "margin": margin}


def policy_values(w: Weights) -> dict[str, float]:
    """The retrieval policy's fields that ``w`` sets (the raw message's list weighs 1)."""
    rw, hist, anchor, _, _, _, top = w
    return {
        "rewrite_query_weight": rw,
        "history_query_weight": hist,
        "anchor_weight": anchor,
        "raw_top_weight": top,
    }


def _line(run: Mapping[str, Any], w: Weights) -> str:
    base, mine = scores(run, None)["followup"], scores(run, w)["followup"]
    cells = [f"{m} {mine[m]:.3f} ({mine[m] - base[m]:+.3f})" for m in ("R@5", "nDCG@5", "R@1")]
    return f"  {run['domain']:14} follow-ups vs last turn: " + ", ".join(cells)


SERVED_HISTORY = "glue"
"""The history list a follow-up searches as served (``retrieval.planning.history_query``,
mixed), which the recording calls ``glue``; replayed with it, the fusion gives the graph's
passages turn for turn."""

GRID: list[Weights] = [
    (rw, hist, anchor, SERVED_HISTORY, True, "mixed", top)
    for rw, hist, anchor, top in itertools.product(
        (0.0, 0.5, 1.0, 1.5, 2.0, 3.0),
        (0.0, 0.5, 1.0, 1.5, 2.0, 3.0),
        (0.0, 0.25, 0.5, 1.0, 1.5, 2.0),
        (0.0, 0.5, 1.0, 2.0, 4.0),
    )
]


def _best(runs: Sequence[Mapping[str, Any]], goal: str = "mean") -> list[tuple[float, Weights]]:
    aim = OBJECTIVES[goal]
    scored = [(sum(aim(r, w) for r in runs) / len(runs), w) for w in GRID]
    return sorted(scored, key=lambda x: (-x[0], x[1]))


def _fitted(
    runs: Sequence[Mapping[str, Any]], shown: Sequence[Mapping[str, Any]], goal: str, label: str
) -> Weights:
    """The best weights for ``runs`` under ``goal``: the top five printed, then what each
    of ``shown`` gets with the best."""
    scored = _best(runs, goal)
    print(f"fit on {label}, top 5 ({goal} objective):")
    for s, w in scored[:5]:
        print(f"  {w}: {s:.4f}")
    for run in shown:
        print(_line(run, scored[0][1]))
    return scored[0][1]


def fit(
    first: dict[str, Any],
    second: dict[str, Any],
    tests: Sequence[dict[str, Any]],
    goal: str = "mean",
) -> None:
    """Each file's fit, reported on itself, the other file and ``tests``."""
    for fit_on, test_on in ((first, second), (second, first)):
        _fitted([fit_on], (fit_on, test_on, *tests), goal, fit_on["domain"])


def joint(
    first: dict[str, Any],
    second: dict[str, Any],
    tests: Sequence[dict[str, Any]],
    goal: str = "mean",
) -> Weights:
    """The weights with the best objective over both files (the defaults), and what each
    file gets with them; returned."""
    return _fitted([first, second], (first, second, *tests), goal, "both")


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


def _named(run: dict[str, Any], path: Path) -> dict[str, Any]:
    """A report file's run, named by its file (two MTRAG-UN runs share a domain's name)."""
    return {**run, "domain": path.stem.removeprefix("rec-")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--data", type=Path, default=Path("../shared/bench/mtrag"))
    rec.add_argument("--domain", required=True)
    rec.add_argument("--out", type=Path, required=True)
    fitp = sub.add_parser("fit")
    fitp.add_argument("files", type=Path, nargs=2)
    fitp.add_argument("--test", type=Path, nargs="*", default=[], help="reported, not fitted")
    fitp.add_argument(
        "--objective",
        choices=sorted(OBJECTIVES),
        default="mean",
        help="mean: of all-turn R@5 and the follow-ups' R@5, nDCG@5, R@1; margin: the "
        "smallest clearance of the follow-ups' bars against the last turn",
    )
    fitp.add_argument("--out", type=Path, help="the policy file the joint fit is written to")
    rulep = sub.add_parser("rules")
    rulep.add_argument("files", type=Path, nargs="+")
    rulep.add_argument("--weights", required=True, help="e.g. 1,1,0.5,history,true,mixed")
    args = parser.parse_args()
    if args.cmd == "record":
        run = asyncio.run(record(args.data, args.domain))
        args.out.write_text(json.dumps(run))
    elif args.cmd == "fit":
        first, second = (json.loads(f.read_text()) for f in args.files)
        tests = [_named(json.loads(f.read_text()), f) for f in args.test]
        fit(first, second, tests, args.objective)
        best = joint(first, second, tests, args.objective)
        if args.out is not None:
            write_policy(load_policy(args.out).with_values(policy_values(best)), args.out)
    else:
        rw, hist, anchor, lst, gate, alone, *top = args.weights.split(",")
        w: Weights = (
            float(rw),
            float(hist),
            float(anchor),
            lst,
            gate == "true",
            alone,
            float(top[0]) if top else 0.0,
        )
        rules([json.loads(f.read_text()) for f in args.files], w)


if __name__ == "__main__":
    main()
