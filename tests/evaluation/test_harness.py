"""The evaluation harness on small files of the benchmarks' formats."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from convrag.evaluation.mtrag import BASELINES, evaluate_mtrag
from convrag.services import Services

PASSAGES = {
    "p1": (
        "Arizona Cardinals",
        "The Arizona Cardinals play home games at State Farm Stadium in Glendale, Arizona.",
    ),
    "p2": ("Arizona Cardinals", "The Cardinals played a regular season game in London in 2017."),
    "p3": ("Tomatoes", "Tomato plants need six hours of direct sunlight every day."),
    "p4": ("Volcanoes", "Pyroclastic flows move down volcano slopes at great speed."),
}


def _mtrag_dir(root: Path, filler: int = 0) -> Path:
    """A domain "mini" of two judged turns (answerable, with reference answers), and
    ``filler`` more passages that no turn is about."""
    d = root / "mini"
    d.mkdir()
    passages = dict(PASSAGES)
    for i in range(filler):
        passages[f"f{i}"] = ("Filler", f"Filler passage number {i} about nothing in particular.")
    with gzip.open(d / "corpus.jsonl.gz", "wt") as fh:
        for pid, (title, text) in passages.items():
            fh.write(json.dumps({"_id": pid, "doc_id": pid, "title": title, "text": text}) + "\n")
    turns = [
        {
            "task_id": "c1<::>1",
            "turn": 1,
            "question": "Where do the Arizona Cardinals play?",
            "rewrite_llm": None,
            "reference_answer": "The Cardinals play at State Farm Stadium in Glendale.",
            "answerability": ["ANSWERABLE"],
            "multi_turn": ["N/A"],
            "history": [],
            "prev_turn_relevant_passage_ids": [],
        },
        {
            "task_id": "c1<::>2",
            "turn": 2,
            "question": "Did they ever play in London?",
            "rewrite_llm": "Did the Arizona Cardinals ever play in London?",
            "reference_answer": "Yes, they played a regular season game in London in 2017.",
            "answerability": ["ANSWERABLE"],
            "multi_turn": ["Follow-up"],
            "history": [
                {"speaker": "user", "text": "Where do the Arizona Cardinals play?"},
                {"speaker": "agent", "text": "At State Farm Stadium in Glendale."},
            ],
            "prev_turn_relevant_passage_ids": ["p1"],
        },
    ]
    (d / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (d / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nc1<::>1\tp1\t1\nc1<::>2\tp2\t1\n")
    return d


async def test_mtrag_report_names_the_reranker_convrag_ran_with(
    services: Services, tmp_path: Path
) -> None:
    from dataclasses import replace

    import aiohttp

    from convrag.rerank import HttpReranker
    from tests.test_rerank import serving

    async with serving("Glendale") as (_, url), aiohttp.ClientSession() as session:
        reranked = replace(services, reranker=HttpReranker(f"{url}/rerank", session))
        report = await evaluate_mtrag(
            reranked, _mtrag_dir(tmp_path), "mini", strategies=["convrag"]
        )
    assert report["reranker"] == f"http:{url}/rerank"


async def test_mtrag_report_has_every_strategy_split_by_turn_type(
    services: Services, tmp_path: Path
) -> None:
    report = await evaluate_mtrag(services, _mtrag_dir(tmp_path), "mini")
    assert report["n_turns"] == 2 and report["n_followup"] == 1
    assert set(report["strategies"]) == {
        *BASELINES,
        "convrag",
        "convrag_no_anchor",
        "convrag_lastturn",
        "convrag_rewrite_llm",
        "convrag_llm_reference",
    }
    assert report["embedder"] and report["reranker"] == "none"
    for scores in report["strategies"].values():
        assert set(scores) == {"all", "followup", "standalone"}
        assert 0.0 <= scores["all"]["R@5"] <= 1.0 and "nDCG@10" in scores["all"]
    assert report["strategies"]["hybrid_rewrite_llm"]["followup"]["R@3"] == 1.0
    assert report["strategies"]["convrag"]["all"]["R@3"] == 1.0
    # The LLM path, its rewrite MTRAG's own: "they" resolved, London's passage found.
    assert report["strategies"]["convrag_llm_reference"]["followup"]["R@3"] == 1.0


async def test_mtrag_ingest_progress_counts_every_document_done_so_far(
    services: Services, tmp_path: Path
) -> None:
    calls: list[tuple[str, int, int]] = []
    await evaluate_mtrag(
        services,
        _mtrag_dir(tmp_path, filler=130),
        "mini",
        strategies=["dense_lastturn"],
        progress=lambda name, done, total: calls.append((name, done, total)),
    )
    ingest = [(done, total) for name, done, total in calls if name == "ingest"]
    assert ingest == [(128, 134), (134, 134)]  # batches of 128: a count, not a batch size


async def test_mtrag_overrides_reach_convrags_graph_and_the_report(
    services: Services, tmp_path: Path
) -> None:
    report = await evaluate_mtrag(
        services,
        _mtrag_dir(tmp_path),
        "mini",
        strategies=["convrag"],
        overrides={"rag_enabled": False},
    )
    assert report["context_overrides"] == {"rag_enabled": False}
    assert report["strategies"]["convrag"]["all"]["R@5"] == 0.0  # no retrieval at all


async def test_mtrag_names_the_missing_file(services: Services, tmp_path: Path) -> None:
    import pytest

    with pytest.raises(ValueError, match=r"qrels\.tsv not found"):
        (tmp_path / "x").mkdir()
        (tmp_path / "x" / "turns.jsonl").write_text("")
        await evaluate_mtrag(services, tmp_path, "x")
