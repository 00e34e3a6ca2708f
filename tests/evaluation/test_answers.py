"""The answer evaluation on small files of MTRAG's format."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convrag.evaluation.answers import evaluate_answers
from convrag.services import Services
from tests.evaluation.test_harness import _mtrag_dir


def _with_unanswerable_and_offtopic(root: Path) -> Path:
    d = _mtrag_dir(root)
    with open(d / "turns.jsonl", "a") as fh:
        fh.write(
            json.dumps(
                {
                    "task_id": "c2<::>1",
                    "turn": 1,
                    "question": "What is the boiling point of liquid nitrogen in kelvin?",
                    "rewrite_llm": None,
                    "reference_answer": None,
                    "answerability": ["UNANSWERABLE"],
                    "multi_turn": ["N/A"],
                    "history": [],
                    "prev_turn_relevant_passage_ids": [],
                }
            )
            + "\n"
        )
    other = root / "other"
    other.mkdir()
    first = "How do I reset my router?"
    (other / "turns.jsonl").write_text(
        json.dumps({"task_id": "o<::>1", "turn": 1, "question": first, "history": []})
        + "\n"
        + json.dumps(
            {
                "task_id": "o<::>2",
                "turn": 2,
                "question": "And the firmware?",
                "history": [{"speaker": "user", "text": first}],
            }
        )
        + "\n"
    )
    return root


async def test_answer_report_scores_three_systems_and_off_topic_questions(
    services: Services, tmp_path: Path
) -> None:
    root = _with_unanswerable_and_offtopic(tmp_path)
    turns_file = tmp_path / "out" / "turns.jsonl"
    report = await evaluate_answers(services, root, "mini", turns_out=turns_file)
    assert report["n_turns"] == 3 and report["labels"] == {"ANSWERABLE": 2, "UNANSWERABLE": 1}
    assert report["offtopic_domain"] == "other" and report["n_offtopic"] == 1
    assert set(report["systems"]) == {"convrag", "top1_sentence", "oracle_sentence"}
    convrag = report["systems"]["convrag"]
    assert set(convrag["abstention"]) >= {"precision", "recall", "f1", "false_abstention_rate"}
    assert set(convrag["answerable"]) >= {
        "rougeL_recall",
        "token_f1",
        "cites_gold",
        "citation_precision",
    }
    # The Cardinals questions are answered from their passages, citing the gold one.
    assert convrag["answerable"]["cites_gold"] == 1.0
    assert convrag["abstention"]["false_abstention_rate"] == 0.0
    # A question about something the pool never mentions, and another domain's question,
    # get "not found".
    assert convrag["abstention"]["recall"] == 1.0
    assert convrag["offtopic_abstention"] == 1.0
    assert report["systems"]["top1_sentence"]["offtopic_abstention"] == 0.0
    oracle = report["systems"]["oracle_sentence"]["answerable"]
    assert oracle["rougeL_recall"] >= convrag["answerable"]["rougeL_recall"] * 0.5
    # Every turn's answer is kept, scored as the report scores it.
    rows = [json.loads(line) for line in turns_file.read_text().splitlines()]
    labels = sorted(r["answerability"] for r in rows[:3])
    assert labels == ["ANSWERABLE", "ANSWERABLE", "UNANSWERABLE"] and len(rows) == 4
    assert rows[-1]["answerability"] == "OFFTOPIC" and rows[-1]["abstained"] is True
    assert all(r["query"] for r in rows)
    answered = [r for r in rows if r["answerability"] == "ANSWERABLE"]
    assert all(r["cites_gold"] and not r["abstained"] for r in answered)
    rouge = sum(r["rougeL_recall"] for r in answered) / len(answered)
    assert rouge == pytest.approx(convrag["answerable"]["rougeL_recall"], abs=1e-3)


async def test_answer_evaluation_with_llm_needs_a_configured_llm(
    services: Services, tmp_path: Path
) -> None:
    if services.settings.effective_llm_model is not None:
        pytest.skip("an LLM is configured in this environment")
    with pytest.raises(ValueError, match="OPENAI_BASE_URL"):
        await evaluate_answers(services, _mtrag_dir(tmp_path).parent, "mini", llm=True)
