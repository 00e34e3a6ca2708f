"""Rewrite evaluation: corpus BLEU and token F1 of the rules rewrite against references.

Two sources, so a rule can be judged on more than the data it was shaped on:

* CANARD (``rewrite_human``, written by people): each question's history (alternating
  questions and answers) becomes convrag history turns; the dialog's Wikipedia title and
  section open the history, as in the CANARD setup, where the rewriters saw them.
* MTRAG ``turns.jsonl`` (``rewrite_llm``, written by Mixtral-8x7B, not a person): the
  follow-up turns that have one, with the dataset's own earlier turns as history.
* The real-document follow-ups (``benchmarks/realdocs_followups/conversations.jsonl``:
  conversations over the reading corpus, each turn with the standalone question a person
  wrote): every follow-up, its earlier turns as history. The set has no answers, so a
  history turn is its question with an empty answer, its standalone question as the
  service's rewrite of it.

Each is scored on all its cases and on those whose reference rewrote the question (its
words differ): MTRAG's Mixtral left a sixth of its follow-ups as typed, pronoun and all
("how many films does he appear in"), where any resolution scores as a loss.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from convrag.evaluation.metrics import token_f1
from convrag.rewriting.classify import classify
from convrag.rewriting.gate import check_switches, gated_rewrite
from convrag.rewriting.history import Turn


def canard_turns(record: dict[str, Any], *, with_title: bool = True) -> list[Turn]:
    h = record.get("history") or []
    turns = [Turn(h[i], h[i + 1] if i + 1 < len(h) else "") for i in range(0, len(h), 2)]
    if with_title and record.get("wiki_title"):
        turns.insert(0, Turn(str(record["wiki_title"]), str(record.get("section_title") or "")))
    return turns


def mtrag_turns(record: dict[str, Any]) -> list[Turn]:
    """An MTRAG turn's history (``[{speaker, text}]``) as question/answer turns."""
    turns: list[Turn] = []
    pending: str | None = None
    for item in record.get("history") or []:
        if item.get("speaker") == "user":
            pending = str(item.get("text") or "")
        elif pending is not None:
            turns.append(Turn(pending, str(item.get("text") or "")))
            pending = None
    return turns


def conversation_cases(rows: list[dict[str, Any]]) -> list[tuple[str, list[Turn], str]]:
    """(question, history, reference) of every follow-up of conversations written as
    ``{"turns": [{question, standalone, follow_up}]}``."""
    cases: list[tuple[str, list[Turn], str]] = []
    for row in rows:
        history: list[Turn] = []
        for turn in row["turns"]:
            if turn.get("follow_up"):
                cases.append((turn["question"], list(history), turn["standalone"]))
            history.append(Turn(turn["question"], "", turn["standalone"]))
    return cases


def _cases(
    rows: list[dict[str, Any]], path: Path, with_title: bool
) -> tuple[str, list[tuple[str, list[Turn], str]]]:
    """(dataset name, [(question, history, reference)]) for any supported format."""
    if rows and "rewrite_human" in rows[0]:
        return f"CANARD {path.name}", [
            (r["question"], canard_turns(r, with_title=with_title), r["rewrite_human"])
            for r in rows
        ]
    if rows and "rewrite_llm" in rows[0] and "history" in rows[0]:
        follow_ups = [
            r
            for r in rows
            if r.get("rewrite_llm")
            and any(m in ("Follow-up", "Clarification") for m in r.get("multi_turn") or [])
        ]
        name = f"MTRAG {path.parent.name} follow-ups (reference: rewrite_llm, Mixtral)"
        return name, [(r["question"], mtrag_turns(r), r["rewrite_llm"]) for r in follow_ups]
    if rows and "turns" in rows[0]:
        return f"conversations {path.parent.name} follow-ups", conversation_cases(rows)
    raise ValueError(
        f"{path}: expected CANARD lines (question, history, rewrite_human), MTRAG "
        "turns.jsonl lines (question, history, rewrite_llm) or conversations "
        "({turns: [{question, standalone, follow_up}]})"
    )


def evaluate_rewrite(
    path: Path,
    *,
    limit: int | None = None,
    with_title: bool = True,
    without: Collection[str] = (),
) -> dict[str, Any]:
    """BLEU (sacrebleu, corpus level) and mean token F1 of each system; convrag's is the
    service's rules rewrite (gated, continuations reusing the previous question), with
    the rules named in ``without`` switched off."""
    import sacrebleu

    off = check_switches(without)

    if not path.is_file():
        raise ValueError(
            f"{path}: not a file; pass the CANARD jsonl (e.g. "
            "../shared/bench/canard/dev_half.jsonl) or an MTRAG turns.jsonl"
        )
    rows = [json.loads(line) for line in path.open() if line.strip()]
    dataset, cases = _cases(rows, path, with_title)
    if limit:
        cases = cases[:limit]
    if not cases:
        raise ValueError(f"{path}: no question with a reference rewrite")
    refs = [ref for *_, ref in cases]
    raw = [q for q, *_ in cases]
    started = time.perf_counter()
    gated = [
        gated_rewrite(q, history, without=off)
        if classify(q, history) == "follow_up"
        else (q.strip(), None)
        for q, history, _ in cases
    ]
    ours = [query for query, _ in gated]
    per_call_ms = (time.perf_counter() - started) * 1000 / len(cases)

    def score(hyps: list[str], refs: list[str]) -> dict[str, float]:
        return {
            "bleu": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 2),
            "token_f1": round(sum(map(token_f1, hyps, refs)) / max(1, len(refs)), 4),
        }

    rewrote = [i for i, (q, _, ref) in enumerate(cases) if _words(ref) != _words(q)]
    return {
        "dataset": dataset,
        "n": len(cases),
        "n_reference_rewrote": len(rewrote),
        "ms_per_rewrite": round(per_call_ms, 3),
        "without": sorted(off),
        "gate_rejected": sum(why is not None for _, why in gated),
        "systems": {"raw_question": score(raw, refs), "convrag": score(ours, refs)},
        "reference_rewrote": {
            name: score([hyps[i] for i in rewrote], [refs[i] for i in rewrote])
            for name, hyps in (("raw_question", raw), ("convrag", ours))
        },
    }


def _words(text: str) -> list[str]:
    """The words of ``text``, lower-cased: a reference with the question's words says the
    question needs no rewrite."""
    return re.findall(r"\w+", text.lower())
