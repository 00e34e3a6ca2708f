"""Fit the quoted-answer ranker (issue 45): which sentence of the sources an answer quotes.

    CONVRAG_DATA_DIR=D python benchmarks/fit_sentences.py record --data ../shared/bench/mtrag \\
        --domain clapnq --out rec-sent-mtrag-clapnq.jsonl          # and cloud
    CONVRAG_DATA_DIR=R python benchmarks/fit_sentences.py record-conversations realconv-dev.json \\
        --out rec-sent-realconv-dev.jsonl    # R: where that eval conversations run kept its data
    python benchmarks/fit_sentences.py report rec-sent-*.jsonl     # every fit direction
    python benchmarks/fit_sentences.py fit rec-sent-*.jsonl --out src/convrag/retrieval/policy.json

``record`` searches each answerable turn's query (the rules' rewrite; the hybrid search's
first five chunks as its sources), takes the sentences the quoted answer would rank
(:func:`convrag.retrieval.ranking.ranked_by_words`, the policy's ``semantic_candidates``),
and keeps each one's cosine to the query and :func:`convrag.retrieval.quoting.
sentence_features`, labelled: for MTRAG, whether three in five of its content words are in
the reference answer; for a conversation set, whether it holds one of the turn's key facts.
``report`` fits a pairwise logistic regression (scikit-learn) on each set and scores every
set by the share of turns whose first-ranked sentence is labelled (P@1, over turns with
one), beside the policy's model. ``fit`` fits on every file given and writes
``sentence_model``: each feature's weight over the cosine's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from fit_cli import FitScript, mtrag_domain, rules_follow_up, run
from sklearn.linear_model import LogisticRegression

from convrag.config import get_settings
from convrag.embeddings import cosine_to_query
from convrag.evaluation.mtrag import (
    history_turns,
)
from convrag.records import HistoryTurn, Source
from convrag.retrieval.policy import default_policy
from convrag.retrieval.quoting import SENTENCE_FEATURES, expected_answer, sentence_features
from convrag.retrieval.ranking import ranked_by_words
from convrag.services import Services, open_services
from convrag.text.tokens import content_words, fold, tokenize

Row = dict[str, Any]
NAMES = ("cosine", *SENTENCE_FEATURES)
SOURCES = 5


def _words(text: str) -> list[str]:
    return [fold(t.low) for t in content_words(tokenize(text))]


def from_reference(reference: str) -> Callable[[str], bool]:
    said = set(_words(reference))

    def label(sent: str) -> bool:
        words = _words(sent)
        return len(words) >= 3 and sum(w in said for w in words) >= 0.6 * len(words)

    return label


def from_key_facts(facts: Sequence[str]) -> Callable[[str], bool]:
    wanted = [set(_words(f)) for f in facts if _words(f)]

    def label(sent: str) -> bool:
        words = set(_words(sent))
        return any(len(f & words) >= 0.8 * len(f) for f in wanted)

    return label


async def candidates(
    services: Services,
    query: str,
    sources: Sequence[Source],
    history: Sequence[HistoryTurn],
    label: Callable[[str], bool],
) -> list[dict[str, Any]]:
    """The sentences the quoted answer ranks for ``query`` over ``sources`` after
    ``history``, each with its text, features and label."""
    policy = default_policy()
    scored = ranked_by_words(
        query, sources, history=history, question_to_answer=policy.question_to_answer
    )[: policy.semantic_candidates]
    if not scored:
        return []
    cosines = cosine_to_query(services.sentences)(query, [s for *_, s in scored])
    expects = expected_answer(query)
    best = scored[0][0]
    return [
        {
            "text": sent,
            "features": {
                "cosine": float(cos),
                **sentence_features(sent, n, pos, score / best, expects),
            },
            "label": label(sent),
        }
        for (score, n, pos, sent), cos in zip(scored, cosines, strict=True)
    ]


async def searched(services: Services, workspace: str, query: str) -> list[Source]:
    hits = await services.searcher.search(workspace, query, top_k=SOURCES)
    return [h.as_source() for h in hits[:SOURCES]]


async def record(data: Path, domain: str) -> list[Row]:
    rows: list[Row] = []
    async with mtrag_domain(data, domain) as (services, ev, turns, _):
        for turn in turns:
            if turn.answerability not in ("ANSWERABLE", "PARTIAL") or not turn.reference_answer:
                continue
            history = history_turns(turn, ev.workspace, ev.title_of)
            query = rules_follow_up(turn.question, history) or turn.question
            sources = await searched(services, ev.workspace, query)
            label = from_reference(turn.reference_answer)
            found = await candidates(services, query, sources, history, label)
            rows.append({"task_id": turn.task_id, "query": query, "candidates": found})
    return rows


async def served(services: Services, workspace: str, record: Row) -> list[Source] | None:
    """The sources the run answered from (by their ids), or None when it kept no ids."""
    ids = [s.get("id") for s in record["sources"]]
    if not ids or not all(ids):
        return None
    rows = {r.id: r for r in await services.db.documents.get_chunks(workspace, ids)}
    return [
        Source(
            id=i,
            source_type="chunk",
            document_id=rows[i].document_id,
            title=rows[i].title,
            text=rows[i].text,
            url=None,
            score=1.0,
        )
        for i in ids
        if i in rows
    ]


async def record_conversations(report: Path) -> list[Row]:
    """Each turn with key facts over the sources the run answered it from (a fresh search
    of its rewrite when the report kept no ids), after the run's previous turn."""
    run = json.loads(report.read_text())
    rows: list[Row] = []
    previous: dict[tuple[str, int], Row] = {
        (r["conversation"], r["turn"]): r for r in run["records"]
    }
    async with open_services(get_settings()) as services:
        for r in run["records"]:
            if not r.get("key_facts"):
                continue
            query = r["rewrite"] or r["question"]
            sources = await served(services, run["workspace"], r)
            if sources is None:
                sources = await searched(services, run["workspace"], query)
            before = previous.get((r["conversation"], r["turn"] - 1))
            history = [_history_turn(before)] if before else []
            label = from_key_facts(r["key_facts"])
            found = await candidates(services, query, sources, history, label)
            task = f"{r['conversation']}:{r['turn']}"
            rows.append({"task_id": task, "query": query, "candidates": found})
    return rows


def _history_turn(record: Row) -> HistoryTurn:
    return HistoryTurn(
        turn_number=record["turn"],
        question=record["question"],
        answer=record["answer"],
        contextualized_query=record.get("rewrite"),
        entities=[],
        cited_document_ids=[],
    )


def load(paths: Sequence[Path]) -> list[Row]:
    rows = []
    for path in paths:
        match = re.match(r"rec-sent-(.+)\.jsonl$", path.name)
        if match is None:
            raise SystemExit(f"{path}: expected a file named rec-sent-NAME.jsonl")
        for line in path.read_text().splitlines():
            rows.append({**json.loads(line), "set": match[1]})
    return rows


def fit(rows: Sequence[Row], names: Sequence[str]) -> dict[str, float]:
    """Each feature's weight over the cosine's: a pairwise logistic regression (a
    labelled sentence against an unlabelled one of the same turn, on the difference of
    their features, no intercept), so that what is fitted is the order within a turn."""
    keep = ("cosine", *names)
    diffs = []
    for r in rows:
        pos = [c for c in r["candidates"] if c["label"]]
        neg = [c for c in r["candidates"] if not c["label"]]
        for a in pos:
            for b in neg:
                diffs.append([a["features"][n] - b["features"][n] for n in keep])
    d = np.array(diffs, dtype=float)
    scale = np.where(d.std(axis=0) > 0, d.std(axis=0), 1.0)
    x = np.vstack([d / scale, -d / scale])
    y = np.array([1] * len(d) + [0] * len(d))
    model = LogisticRegression(C=1.0, fit_intercept=False, max_iter=2000).fit(x, y)
    weights = model.coef_[0] / scale
    if weights[0] <= 0:
        raise SystemExit("the fitted cosine weight is not positive: no model in its units")
    return {n: round(float(w / weights[0]), 6) for n, w in zip(names, weights[1:], strict=True)}


def p_at_1(rows: Sequence[Row], model: dict[str, float]) -> str:
    judged = [r["candidates"] for r in rows if any(c["label"] for c in r["candidates"])]

    def score(c: dict[str, Any]) -> float:
        f = c["features"]
        return float(f["cosine"] + sum(w * f[n] for n, w in model.items()))

    hits = sum(bool(max(cands, key=score)["label"]) for cands in judged)
    return f"{hits}/{len(judged)} ({hits / max(1, len(judged)):.3f})"


def report(rows: list[Row], names: Sequence[str]) -> None:
    sets = sorted({r["set"] for r in rows})
    shipped = default_policy().sentence_model
    print("policy's model: " + json.dumps(shipped))
    for name in sets:
        print(f"  {name}: P@1 {p_at_1([r for r in rows if r['set'] == name], shipped)}")
    cosine_only: dict[str, float] = {}
    for name in sets:
        held = [r for r in rows if r["set"] == name]
        print(f"  cosine alone, {name}: P@1 {p_at_1(held, cosine_only)}")
    for train in sets:
        model = fit([r for r in rows if r["set"] == train], names)
        print(f"fit on {train}: {json.dumps(model)}")
        for name in sets:
            kind = "fitted on" if name == train else "held out"
            held = [r for r in rows if r["set"] == name]
            print(f"  {name} ({kind}): P@1 {p_at_1(held, model)}")


def main(argv: Sequence[str] | None = None) -> None:
    script = FitScript(
        __doc__.split("\n\n")[0],
        record,
        record_conversations,
        load,
        report,
        fit,
        SENTENCE_FEATURES,
        "sentence_model",
    )
    run(script, argv)


if __name__ == "__main__":
    main()
