"""Choose the "not found" evidence and its floor by measurement: fit on one MTRAG domain,
test on another, both ways.

    CONVRAG_DATA_DIR=bench-out/data python benchmarks/abstention_floor.py record \\
        --domain clapnq --out bench-out/evidence-clapnq.json
    CONVRAG_DATA_DIR=bench-out/data-cloud python benchmarks/abstention_floor.py record \\
        --domain cloud --out bench-out/evidence-cloud.json
    python benchmarks/abstention_floor.py fit bench-out/evidence-clapnq.json \\
        bench-out/evidence-cloud.json
    python benchmarks/abstention_floor.py band bench-out/evidence-clapnq.json \\
        bench-out/evidence-cloud.json
    python benchmarks/abstention_floor.py every-term bench-out/evidence-clapnq.json \\
        bench-out/evidence-cloud.json

``record`` runs every turn of a domain through the real graph without an LLM, as
``convrag eval answers`` does (the dataset's own history, the pool ingested into
``mtrag-<domain>`` if it is not there yet), and then the other domain's first questions
as off-topic probes. It records what the "not found" decision weighs: the best chunk's
cosine, the candidate sentences (the 24 an extractive answer weighs, best by words first)
with their cosines, every source's dense and keyword scores, and the rare-term IDF. The
floor is set to 1e-6 for the run, so that the evidence is computed but never refuses, and
``sentence_band`` to 1, so that every turn weighs its sentences; the recorded rows
reproduce ``convrag eval answers``'s abstention figures.

``band`` replays the recordings with the sentences weighed only near the floor (and only
the best few by words), and counts the decisions that differ from weighing every turn's 24:
how ``sentence_band`` and the evidence's 16 candidates were chosen.

``every-term`` replays the default floor without and with the rule that a sentence
holding every query term (no rare term missing) overrules it, and names the turns it
changes.

``fit`` scores candidate signals over a grid of floors: for each, the floor with the best
abstention F1 (UNANSWERABLE against ANSWERABLE turns) within the bars (false abstention
≤ 10 %, off-topic abstention ≥ 90 %) on one domain, then the same floor on the other.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import convrag.retrieval.evidence as evidence
from convrag.config import get_settings
from convrag.evaluation.answers import AnswerEvaluation, _first_questions, _other_domain
from convrag.evaluation.mtrag import domain_path, load_domain
from convrag.records import Source
from convrag.retrieval.evidence import closest_evidence
from convrag.retrieval.policy import RetrievalPolicy, default_policy
from convrag.retrieval.ranking import Similarity, query_coverage, ranked_by_words
from convrag.services import open_services

POLICY = default_policy()
DEFAULT_RARE_TERM_PENALTY = POLICY.rare_term_penalty
DEFAULT_RELEVANCE_FLOOR = POLICY.relevance_floor
DEFAULT_SENTENCE_BAND = POLICY.sentence_band
SEMANTIC_CANDIDATES = POLICY.semantic_candidates
"""How many sentences are recorded per turn: as many as the quoted answer weighs."""

MAX_FALSE_ABSTENTION = 0.10
MIN_OFFTOPIC_ABSTENTION = 0.90
GRID = [round(0.20 + 0.005 * i, 3) for i in range(101)]  # 0.20 .. 0.70
PENALTIES = (0.0, 0.015, 0.03)

Row = dict[str, Any]


def _closest(row: Row, n: int, candidates: int = SEMANTIC_CANDIDATES) -> float:
    cosines = sorted(row["cosines"][:candidates], reverse=True)[:n]
    return statistics.fmean(cosines) if cosines else float(row["chunk"])


def _coverage(row: Row) -> float:
    """The share of the query's terms in the sentence closest to it in meaning."""
    pairs = list(zip(row.get("cosines", []), row.get("sentences", []), strict=False))
    if not pairs:
        return 0.0
    return query_coverage(row["query"], max(pairs)[1])


def _margin(row: Row) -> float:
    """How far the best source's cosine stands above the mean of the next four."""
    dense = sorted((float(d) for d in row.get("dense", []) if d is not None), reverse=True)
    return dense[0] - statistics.fmean(dense[1:5]) if len(dense) > 1 else 0.0


SIGNALS: dict[str, Callable[[Row], float]] = {
    "best chunk's cosine": lambda r: float(r["chunk"]),
    "closest sentence": lambda r: _closest(r, 1),
    "mean of the two closest sentences": lambda r: _closest(r, 2),
    "mean of the two closest of the 16 best by words": lambda r: _closest(r, 2, 16),
    "mean of the two closest of the 12 best by words": lambda r: _closest(r, 2, 12),
    "mean of the three closest sentences": lambda r: _closest(r, 3),
    "mean of chunk and closest sentence": lambda r: (_closest(r, 1) + float(r["chunk"])) / 2,
    "two closest + 0.1 x the closest one's query coverage": lambda r: (
        _closest(r, 2) + 0.1 * _coverage(r)
    ),
    "two closest + 0.1 x the best chunk's margin over the next four": lambda r: (
        _closest(r, 2) + 0.1 * _margin(r)
    ),
}
"""Each signal before the rare-term penalty; a turn with no candidate sentence falls back
to the chunk's cosine, as the graph does."""


async def record(data: Path, domain: str, offtopic: str | None) -> list[Row]:
    """The evidence of every turn of ``domain`` and of the off-topic probes."""
    path = domain_path(data, domain)
    off_name = offtopic or _other_domain(path.parent, path.name)
    seen: Row = {}
    cosines = evidence.candidate_cosines

    def recording(
        query: str,
        sources: Sequence[Source],
        similarity: Similarity,
        policy: RetrievalPolicy | None = None,
    ) -> list[float]:
        policy = policy or POLICY
        limit = policy.evidence_candidates
        wider = policy.with_values({"evidence_candidates": SEMANTIC_CANDIDATES})
        seen["chunk"] = max((s.get("dense_score") or 0.0 for s in sources), default=0.0)
        seen["dense"] = [s.get("dense_score") for s in sources]
        seen["bm25"] = [s.get("bm25_score") for s in sources]
        seen["query"] = query
        seen["sentences"] = [
            s
            for *_, s in ranked_by_words(
                query, sources, question_to_answer=policy.question_to_answer
            )[:SEMANTIC_CANDIDATES]
        ]
        seen["cosines"] = cosines(query, sources, similarity, wider)
        seen["limit"] = limit
        return seen["cosines"][:limit]

    evidence.candidate_cosines = recording  # type: ignore[assignment]
    rows: list[Row] = []
    async with open_services(get_settings()) as services:
        searcher = services.searcher
        rarest = searcher.rarest_missing_term

        def recording_rarest(*args: Any, **kwargs: Any) -> float:
            seen["rare"] = rarest(*args, **kwargs)
            return seen["rare"]

        searcher.rarest_missing_term = recording_rarest  # type: ignore[method-assign]
        every_turn = {"policy": {"relevance_floor": 1e-6, "sentence_band": 1.0}}
        ev = AnswerEvaluation(services, f"mtrag-{path.name}", None, every_turn)
        await ev.prepare(path, lambda n, total: None)
        turns, _ = load_domain(path, judged_only=False)
        probes = _first_questions(path.parent / off_name) if off_name else []
        for i, turn in enumerate([*turns, *probes]):
            seen.clear()
            await ev.convrag(turn, with_history=i < len(turns))
            label = turn.answerability if i < len(turns) else "OFFTOPIC"
            rows.append({"task_id": turn.task_id, "label": label, **seen})
            if i % 50 == 0:
                print(f"{domain}: {i}/{len(turns) + len(probes)}", file=sys.stderr)
    return rows


def score(rows: list[Row], signal: Callable[[Row], float], penalty: float, floor: float) -> Row:
    """Abstention figures when every turn whose evidence is under ``floor`` abstains.
    A turn that retrieved nothing weighed no evidence (it never abstains by the floor)."""

    def abstains(r: Row) -> bool:
        return "chunk" in r and signal(r) - penalty * float(r.get("rare", 0.0)) < floor

    pos = [abstains(r) for r in rows if r["label"] == "UNANSWERABLE"]
    neg = [abstains(r) for r in rows if r["label"] == "ANSWERABLE"]
    off = [abstains(r) for r in rows if r["label"] == "OFFTOPIC"]
    tp, fp = sum(pos), sum(neg)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / len(pos) if pos else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "floor": floor,
        "f1": round(f1, 3),
        "precision": round(precision, 3),
        "recall": round(recall, 3),
        "false_abstention": round(fp / len(neg), 3) if neg else 0.0,
        "offtopic_abstention": round(sum(off) / len(off), 3) if off else 0.0,
    }


def fit(rows: list[Row], signal: Callable[[Row], float], penalty: float) -> Row | None:
    """The floor with the best F1 within both bars (the lowest such floor on a tie)."""
    within = [
        s
        for s in (score(rows, signal, penalty, f) for f in GRID)
        if s["false_abstention"] <= MAX_FALSE_ABSTENTION
        and s["offtopic_abstention"] >= MIN_OFFTOPIC_ABSTENTION
    ]
    return max(within, key=lambda s: (s["f1"], -s["floor"])) if within else None


def fits(domains: dict[str, list[Row]]) -> list[Row]:
    """Every signal and penalty, fitted on each domain and tested on the others."""
    out = []
    for name, signal in SIGNALS.items():
        for penalty in PENALTIES:
            for train, rows in domains.items():
                chosen = fit(rows, signal, penalty)
                tested = {
                    d: score(r, signal, penalty, chosen["floor"]) if chosen else None
                    for d, r in domains.items()
                    if d != train
                }
                out.append(
                    {
                        "signal": name,
                        "penalty": penalty,
                        "fitted_on": train,
                        "fitted": chosen,
                        "tested": tested,
                    }
                )
    return out


def _line(s: Row | None) -> str:
    if s is None:
        return "no floor within the bars"
    return (
        f"floor {s['floor']}: F1 {s['f1']}, false {s['false_abstention']:.1%}, "
        f"off-topic {s['offtopic_abstention']:.1%}"
    )


def _chunk_evidence(row: Row, penalty: float) -> float:
    """The best chunk's cosine less the rare-term penalty: the evidence before sentences."""
    return float(row["chunk"]) - penalty * float(row.get("rare", 0.0))


def decides(
    row: Row, candidates: int, band: float, floor: float, penalty: float, every_term: bool = True
) -> bool:
    """Whether the graph refuses this turn when it weighs the ``candidates`` best sentences
    by words only within ``band`` of ``floor`` (the chunk's evidence decides elsewhere).
    ``every_term``: a sentence that holds every query term, with no rare term missing,
    overrules the floor (``names_every_term``)."""
    if "chunk" not in row:
        return False
    evidence = _chunk_evidence(row, penalty)
    closest = closest_evidence(row["cosines"][:candidates], POLICY.lone_sentence_margin)
    if evidence < floor + band and closest is not None:
        evidence = closest - penalty * float(row.get("rare", 0.0))
    if every_term and evidence < floor and float(row.get("rare", 0.0)) == 0.0:
        best = row.get("sentences", [])[: POLICY.evidence_candidates]
        if any(query_coverage(row["query"], s) == 1.0 for s in best):
            return False
    return evidence < floor


def every_term(domains: dict[str, list[Row]], floor: float, penalty: float) -> list[Row]:
    """The abstention figures at ``floor`` without and with the every-term rule, and the
    turns whose decision it changes."""
    out = []
    for name, rows in domains.items():
        for rule in (False, True):
            scored = score(
                rows,
                lambda r, rule=rule: (
                    -1.0 if decides(r, 16, DEFAULT_SENTENCE_BAND, floor, penalty, rule) else 1.0
                ),
                0.0,
                0.0,
            )
            changed = [
                f"{r['label']}: {r['query'][:60]}"
                for r in rows
                if rule
                and decides(r, 16, DEFAULT_SENTENCE_BAND, floor, penalty, False)
                != decides(r, 16, DEFAULT_SENTENCE_BAND, floor, penalty, True)
            ]
            out.append({"domain": name, "every_term": rule, **scored, "changed": changed})
    return out


def bands(domains: dict[str, list[Row]], floor: float, penalty: float) -> list[Row]:
    """For each (candidates, band): the decisions that differ from weighing all
    :data:`SEMANTIC_CANDIDATES` sentences on every turn, and the sentences embedded a turn."""
    out = []
    for name, rows in domains.items():
        every = [decides(r, SEMANTIC_CANDIDATES, 1.0, floor, penalty) for r in rows]
        for candidates in (8, 12, 16, SEMANTIC_CANDIDATES):
            for band in (0.05, 0.08, 0.10, 0.15):
                changed = [
                    r["label"]
                    for r, e in zip(rows, every, strict=True)
                    if decides(r, candidates, band, floor, penalty) != e
                ]
                embedded = sum(
                    len(r["cosines"][:candidates])
                    for r in rows
                    if "chunk" in r and _chunk_evidence(r, penalty) < floor + band
                )
                out.append(
                    {
                        "domain": name,
                        "candidates": candidates,
                        "band": band,
                        "changed": len(changed),
                        "changed_labels": changed,
                        "sentences_per_turn": round(embedded / len(rows), 2),
                    }
                )
    return out


def _recordings(paths: Sequence[Path]) -> dict[str, list[Row]]:
    domains = {}
    for path in paths:
        recorded = json.loads(path.read_text())
        domains[recorded["domain"]] = recorded["rows"]
    return domains


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record one domain's evidence (CONVRAG_DATA_DIR)")
    rec.add_argument("--data", type=Path, default=Path("../shared/bench/mtrag"))
    rec.add_argument("--domain", required=True)
    rec.add_argument("--offtopic-domain", default=None)
    rec.add_argument("--out", type=Path, required=True)
    fitting = sub.add_parser("fit", help="fit each signal on one recording, test on the rest")
    fitting.add_argument("recordings", type=Path, nargs="+")
    fitting.add_argument("--out", type=Path, default=None)
    banding = sub.add_parser(
        "band", help="decisions changed by weighing fewer sentences, on fewer turns"
    )
    banding.add_argument("recordings", type=Path, nargs="+")
    banding.add_argument("--floor", type=float, default=DEFAULT_RELEVANCE_FLOOR)
    banding.add_argument("--penalty", type=float, default=DEFAULT_RARE_TERM_PENALTY)
    terms = sub.add_parser(
        "every-term", help="figures without and with the every-term rule, at the default floor"
    )
    terms.add_argument("recordings", type=Path, nargs="+")
    args = parser.parse_args()
    if args.command == "record":
        rows = asyncio.run(record(args.data, args.domain, args.offtopic_domain))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"domain": args.domain, "rows": rows}))
        return
    domains = _recordings(args.recordings)
    if args.command == "band":
        for b in bands(domains, args.floor, args.penalty):
            print(
                f"{b['domain']}: {b['candidates']} candidates, band {b['band']}: "
                f"{b['changed']} decisions changed {b['changed_labels']}, "
                f"{b['sentences_per_turn']} sentences embedded a turn"
            )
        return
    if args.command == "every-term":
        for t in every_term(domains, DEFAULT_RELEVANCE_FLOOR, DEFAULT_RARE_TERM_PENALTY):
            print(
                f"{t['domain']}, every-term rule {'on' if t['every_term'] else 'off'}: "
                f"F1 {t['f1']}, false {t['false_abstention']:.1%}, "
                f"off-topic {t['offtopic_abstention']:.1%}; changed {t['changed']}"
            )
        return
    report = fits(domains)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))
    for r in report:
        tests = "; ".join(f"on {d}: {_line(s)}" for d, s in r["tested"].items())
        print(
            f"{r['signal']}, penalty {r['penalty']}, fitted on {r['fitted_on']}: "
            f"{_line(r['fitted'])} -> {tests}"
        )


if __name__ == "__main__":
    main()
