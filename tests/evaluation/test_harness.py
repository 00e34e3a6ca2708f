"""The evaluation harness on small files of the benchmarks' formats."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from convrag.evaluation.canard import evaluate_rewrite
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


def test_rewrite_report_scores_raw_and_convrag(tmp_path: Path) -> None:
    rows = [
        {
            "question": "What about her basic salary?",
            "wiki_title": "Prasad Chaudhari",
            "section_title": "Pay",
            "history": ["What is Prasad Chaudhari's salary?", "It is $120,000."],
            "rewrite_human": "What is Prasad Chaudhari's basic salary?",
        }
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = evaluate_rewrite(path)
    assert report["n"] == 1 and set(report["systems"]) == {"raw_question", "convrag"}
    assert report["systems"]["convrag"]["token_f1"] > report["systems"]["raw_question"]["token_f1"]


def test_rewrite_report_scores_apart_the_references_that_rewrote_the_question(
    tmp_path: Path,
) -> None:
    """A reference that keeps the question's words (an LLM that left "he" as typed) scores
    every resolution as a loss: the report scores the other references on their own."""
    history = ["Who is Doctor Strange?", "A sorcerer in Marvel comics."]
    rows = [
        {
            "question": "How many films does he appear in?",
            "history": history,
            "rewrite_human": "how many films does he appear in",
        },
        {
            "question": "Does he have an infinity gem?",
            "history": history,
            "rewrite_human": "Does Doctor Strange have an infinity gem?",
        },
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = evaluate_rewrite(path)
    assert report["n"] == 2 and report["n_reference_rewrote"] == 1
    rewrote = report["reference_rewrote"]
    assert rewrote["convrag"]["bleu"] > rewrote["raw_question"]["bleu"]
    assert rewrote["convrag"]["token_f1"] == 1.0


def test_rewrite_report_reads_conversations_scoring_only_their_follow_ups(tmp_path: Path) -> None:
    turns = [
        {"question": "What does grep -c do?", "standalone": "What does grep -c do?"},
        {"question": "Is it on by default?", "standalone": "Is grep -c on by default?"},
        {"question": "Why?", "standalone": "Why is grep -c not on by default?"},
    ]
    for turn, follow_up in zip(turns, (False, True, True), strict=True):
        turn["follow_up"] = follow_up  # type: ignore[assignment]
    path = tmp_path / "conversations.jsonl"
    path.write_text(json.dumps({"id": "g-1", "turns": turns}) + "\n")
    report = evaluate_rewrite(path)
    assert report["n"] == 2 and report["dataset"].startswith("conversations")
    assert report["gate_rejected"] == 0
