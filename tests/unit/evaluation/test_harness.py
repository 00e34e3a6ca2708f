"""The evaluation harness on small files of the benchmarks' formats."""

from __future__ import annotations

import json
from pathlib import Path

from convrag.evaluation.canard import evaluate_rewrite


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
