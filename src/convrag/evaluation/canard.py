"""CANARD rewrite evaluation: corpus BLEU and token F1 against human rewrites.

Each question's history (alternating questions and answers) becomes convrag history
turns; the dialog's Wikipedia title and section open the history, as in the CANARD
setup, where they are part of the context the human rewriters saw.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from convrag.evaluation.metrics import token_f1
from convrag.rewriting import Turn, contextualize


def canard_turns(record: dict[str, Any], *, with_title: bool = True) -> list[Turn]:
    h = record.get("history") or []
    turns = [Turn(h[i], h[i + 1] if i + 1 < len(h) else "") for i in range(0, len(h), 2)]
    if with_title and record.get("wiki_title"):
        turns.insert(0, Turn(str(record["wiki_title"]), str(record.get("section_title") or "")))
    return turns


def evaluate_rewrite(
    path: Path, *, limit: int | None = None, with_title: bool = True
) -> dict[str, Any]:
    """BLEU (sacrebleu, corpus level) and mean token F1 of each system."""
    import sacrebleu

    if not path.is_file():
        raise ValueError(
            f"{path}: not a file; pass the CANARD jsonl (e.g. "
            "../shared/bench/canard/dev_half.jsonl)"
        )
    rows = [json.loads(line) for line in path.open() if line.strip()]
    if limit:
        rows = rows[:limit]
    if not rows or "rewrite_human" not in rows[0]:
        raise ValueError(f"{path}: expected CANARD lines with question, history, rewrite_human")
    refs = [r["rewrite_human"] for r in rows]
    raw = [r["question"] for r in rows]
    started = time.perf_counter()
    ours = [contextualize(r["question"], canard_turns(r, with_title=with_title)) for r in rows]
    per_call_ms = (time.perf_counter() - started) * 1000 / len(rows)

    def score(hyps: list[str]) -> dict[str, float]:
        return {
            "bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
            "token_f1": round(sum(map(token_f1, hyps, refs)) / len(refs), 4),
        }

    return {
        "dataset": f"CANARD {path.name}",
        "n": len(rows),
        "ms_per_rewrite": round(per_call_ms, 3),
        "systems": {"raw_question": score(raw), "convrag": score(ours)},
    }
