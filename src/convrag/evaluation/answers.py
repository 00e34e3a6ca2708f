"""MTRAG answer evaluation: does convrag answer, abstain and cite as a user needs?

Every turn of a domain runs through the service's real graph, turn by turn, with the
dataset's own earlier turns as history (as in the retrieval evaluation) and the service's
default settings. Scored side by side with two extractive baselines from the same run:

* ``top1_sentence``: the sentence of the top dense last-turn hit closest to the question
  (by the embedder), citing that hit; it never abstains.
* ``oracle_sentence``: the gold passage sentence with the best ROUGE-L recall against the
  reference answer, the ceiling for one-sentence extractive answers; it abstains exactly
  when a turn has no gold passage.

Abstention treats UNANSWERABLE turns as the positive class against ANSWERABLE ones;
PARTIAL and CONVERSATIONAL turns are reported apart. Answer quality is scored on the
ANSWERABLE turns that have a reference answer, citations against the turn's gold passages.
Off-topic questions (another domain's first turns, asked against this domain's pool) have
answers that are certainly absent: the share that abstains is reported too.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rouge_score import rouge_scorer

from convrag.citations import strip_markers
from convrag.evaluation.metrics import recall_at, token_f1
from convrag.evaluation.mtrag import (
    MtragEvaluation,
    MtragTurn,
    domain_path,
    load_corpus,
    load_domain,
)
from convrag.services import Services
from convrag.text.units import sentences

SYSTEMS = ("convrag", "top1_sentence", "oracle_sentence")


@dataclass(frozen=True)
class Reply:
    """One system's answer to one turn, reduced to what is scored."""

    text: str
    abstained: bool
    cited: list[str] = field(default_factory=list)
    """Passage ids the answer cites, in order."""
    retrieved: list[str] = field(default_factory=list)
    """Passage ids the system had as sources, in rank order."""
    query: str | None = None
    """The standalone query the system searched for, where it rewrites."""
    signals: dict[str, float] | None = None
    """The evidence convrag weighed to answer or abstain (``abstention_signals``)."""


_ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def rouge_l_recall(answer: str, reference: str) -> float:
    """ROUGE-L recall of ``answer`` against ``reference`` (Google's rouge-score)."""
    return float(_ROUGE.score(reference, answer)["rougeL"].recall)


def _mean(values: Iterable[float]) -> float:
    vals = list(values)
    return round(sum(vals) / len(vals), 4) if vals else 0.0


def abstention_scores(pairs: Sequence[tuple[str, bool]]) -> dict[str, float]:
    """Precision, recall and F1 of abstaining on UNANSWERABLE turns against ANSWERABLE
    ones, and the false abstention rate on ANSWERABLE turns. ``pairs`` hold each turn's
    label and whether the system abstained; other labels are ignored here."""
    tp = sum(1 for label, a in pairs if label == "UNANSWERABLE" and a)
    fn = sum(1 for label, a in pairs if label == "UNANSWERABLE" and not a)
    fp = sum(1 for label, a in pairs if label == "ANSWERABLE" and a)
    answerable = sum(1 for label, _ in pairs if label == "ANSWERABLE")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "precision": round(precision, 4),
        "recall": round(recall, 4),
        "f1": round(f1, 4),
        "false_abstention_rate": round(fp / answerable, 4) if answerable else 0.0,
        "abstained": tp + fp,
    }


def answer_scores(
    rows: Sequence[tuple[MtragTurn, Reply, set[str], dict[str, int]]],
) -> dict[str, float]:
    """Answer and citation quality over ANSWERABLE turns with a reference answer."""
    scored = [r for r in rows if r[0].answerability == "ANSWERABLE" and r[0].reference_answer]
    rouge, f1, cites_gold, precision, r5 = [], [], [], [], []
    for turn, reply, gold, qrels in scored:
        text = strip_markers(reply.text)
        ref = turn.reference_answer or ""
        rouge.append(rouge_l_recall(text, ref))
        f1.append(token_f1(text, ref))
        cites_gold.append(1.0 if gold.intersection(reply.cited) else 0.0)
        if reply.cited:
            precision.append(sum(1 for p in reply.cited if p in gold) / len(reply.cited))
        if qrels:
            r5.append(recall_at(reply.retrieved, qrels, 5))
    return {
        "n": len(scored),
        "rougeL_recall": _mean(rouge),
        "token_f1": _mean(f1),
        "cites_gold": _mean(cites_gold),
        "citation_precision": _mean(precision),
        "retrieval_R@5": _mean(r5),
    }


class AnswerEvaluation:
    """The three systems over one domain's pool."""

    def __init__(
        self,
        services: Services,
        workspace: str,
        llm: str | None,
        overrides: Mapping[str, Any] | None = None,
    ) -> None:
        self.services = services
        self.llm = llm
        self.ev = MtragEvaluation(services, workspace, answers=True, overrides=overrides)
        self.text_of: dict[str, str] = {}

    async def prepare(self, path: Path, progress: Callable[[int, int], None]) -> int:
        corpus = load_corpus(path)
        self.text_of = {d.source: d.text for d in corpus}
        await self.ev.prepare(corpus, lambda n: progress(n, len(corpus)))
        return len(corpus)

    async def convrag(self, turn: MtragTurn, *, with_history: bool = True) -> Reply:
        state = await self.ev.run_graph(
            turn, anchored=True, llm=self.llm or "none", with_history=with_history
        )
        cited_docs = [c["document_id"] or "" for c in state.get("citations", [])]
        return Reply(
            text=str(state.get("answer", "")),
            abstained=bool(state.get("flags", {}).get("no_answer")),
            cited=self.ev.passages(cited_docs),
            retrieved=self.ev.passages([s["document_id"] or "" for s in state.get("sources", [])]),
            query=state.get("rewritten_query"),
            signals=state.get("abstention_signals"),
        )

    async def top1_sentence(self, turn: MtragTurn) -> Reply:
        ranked = await self.ev.search(turn.question, "dense")
        if not ranked:
            return Reply(text="", abstained=False)
        units = sentences(self.text_of.get(ranked[0], "")) or [self.text_of.get(ranked[0], "")]
        vectors = np.asarray(self.services.embedder.embed([turn.question, *units]))
        best = int(np.argmax(vectors[1:] @ vectors[0]))
        return Reply(text=units[best], abstained=False, cited=[ranked[0]], retrieved=ranked)

    def oracle_sentence(self, turn: MtragTurn, gold: Sequence[str]) -> Reply:
        best: tuple[float, str, str] | None = None
        for pid in gold:
            for unit in sentences(self.text_of.get(pid, "")):
                score = rouge_l_recall(unit, turn.reference_answer or "")
                if best is None or score > best[0]:
                    best = (score, unit, pid)
        if best is None:
            return Reply(text="", abstained=True)
        return Reply(text=best[1], abstained=False, cited=[best[2]], retrieved=list(gold))


def _other_domain(data: Path, domain: str) -> str | None:
    for child in sorted(p for p in data.iterdir() if p.is_dir()):
        if child.name != domain and (child / "turns.jsonl").exists():
            return child.name
    return None


def _first_questions(path: Path) -> list[MtragTurn]:
    turns, _ = load_domain(path, judged_only=False)
    return [
        MtragTurn(
            task_id=f"offtopic::{t.task_id}",
            question=t.question,
            rewrite_llm=None,
            followup=False,
            history=[],
            prev_passages=[],
            all_questions=t.question,
        )
        for t in turns
        if t.turn == 1
    ]


async def evaluate_answers(
    services: Services,
    data: Path,
    domain: str,
    *,
    llm: bool = False,
    offtopic_domain: str | None = None,
    limit: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    overrides: Mapping[str, Any] | None = None,
    turns_out: Path | None = None,
) -> dict[str, Any]:
    """Score convrag's answers and the two baselines; returns the documented JSON shape.
    ``overrides`` sets context knobs for convrag's runs (``--set``); ``turns_out`` gets
    convrag's reply to every turn, off-topic ones included (:func:`write_turns`)."""
    path = domain_path(data, domain)
    model = _answer_model(services, llm)
    offtopic_name, offtopic = _offtopic_turns(path, offtopic_domain)
    turns, qrels = load_domain(path, judged_only=False)
    if limit:
        turns, offtopic = turns[:limit], offtopic[:limit]
    evaluation = AnswerEvaluation(services, f"mtrag-{path.name}", model, overrides)
    started = time.perf_counter()
    n_passages = await evaluation.prepare(
        path, lambda n, total: progress("ingest", n, total) if progress else None
    )
    ingest_s = time.perf_counter() - started
    replies, seconds = await _answer_turns(evaluation, turns, qrels, progress)
    off_replies: list[Reply] = []
    for i, turn in enumerate(offtopic, 1):
        off_replies.append(await evaluation.convrag(turn, with_history=False))
        if progress:
            progress(f"off-topic ({offtopic_name})", i, len(offtopic))
    systems = {
        name: _system_scores(
            turns, replies[name], qrels, _offtopic_abstained(name, off_replies), seconds[name]
        )
        for name in SYSTEMS
    }
    if turns_out is not None:
        write_turns(turns_out, turns, replies["convrag"], qrels, offtopic, off_replies)
    return {
        "dataset": f"MTRAG (pooled) {path.name}",
        "n_turns": len(turns),
        "labels": dict(Counter(t.answerability for t in turns)),
        "offtopic_domain": offtopic_name,
        "n_offtopic": len(offtopic),
        "llm": model,
        "corpus_passages": n_passages,
        "ingest_seconds": round(ingest_s, 1),
        "answer_threshold": services.policy.with_values(
            (overrides or {}).get("policy", {})
        ).answer_threshold,
        "context_overrides": dict(overrides or {}),
        "systems": systems,
    }


def _answer_model(services: Services, llm: bool) -> str | None:
    """The LLM convrag answers with (``--llm``), or None for its extractive answers;
    ``ValueError`` when ``--llm`` is asked for and no LLM is configured."""
    model = services.settings.effective_llm_model if llm else None
    if llm and model is None:
        raise ValueError(
            "--llm needs an LLM: set OPENAI_BASE_URL (and OPENAI_API_KEY, LLM_MODEL) to an "
            "OpenAI-compatible server"
        )
    return model


def _offtopic_turns(path: Path, offtopic_domain: str | None) -> tuple[str | None, list[MtragTurn]]:
    """The off-topic domain's name (``offtopic_domain``, else another domain beside
    ``path``; None when there is none) and its first questions; ``ValueError`` when the
    named domain has no turns file."""
    offtopic_name = offtopic_domain or (_other_domain(path.parent, path.name))
    if not offtopic_name:
        return offtopic_name, []
    off_path = path.parent / offtopic_name
    if not (off_path / "turns.jsonl").exists():
        raise ValueError(f"--offtopic-domain: {off_path / 'turns.jsonl'} not found")
    return offtopic_name, _first_questions(off_path)


def _gold(qrels: Mapping[str, Mapping[str, int]], task_id: str) -> list[str]:
    """The passages judged relevant to a turn, in the qrels' order."""
    return [p for p, g in qrels.get(task_id, {}).items() if g > 0]


async def _answer_turns(
    evaluation: AnswerEvaluation,
    turns: Sequence[MtragTurn],
    qrels: Mapping[str, Mapping[str, int]],
    progress: Callable[[str, int, int], None] | None,
) -> tuple[dict[str, list[Reply]], dict[str, float]]:
    """Every system's reply to every turn, in turn order, and the seconds each system
    spent on them in all."""
    replies: dict[str, list[Reply]] = defaultdict(list)
    seconds: dict[str, float] = defaultdict(float)
    for i, turn in enumerate(turns, 1):
        gold = _gold(qrels, turn.task_id)
        for name in SYSTEMS:
            t0 = time.perf_counter()
            if name == "convrag":
                reply = await evaluation.convrag(turn)
            elif name == "top1_sentence":
                reply = await evaluation.top1_sentence(turn)
            else:
                reply = evaluation.oracle_sentence(turn, gold)
            seconds[name] += time.perf_counter() - t0
            replies[name].append(reply)
        if progress:
            progress("turns", i, len(turns))
    return replies, seconds


#: Whether each baseline abstains on an off-topic question, which it is not run on:
#: the top hit's sentence never abstains, the oracle always does (no gold passage).
_BASELINE_OFFTOPIC_ABSTAINS = {"top1_sentence": False, "oracle_sentence": True}


def _offtopic_abstained(name: str, off_replies: Sequence[Reply]) -> list[bool]:
    """Whether system ``name`` abstained on each off-topic question (only convrag is
    run on them)."""
    if name == "convrag":
        return [r.abstained for r in off_replies]
    return [_BASELINE_OFFTOPIC_ABSTAINS[name]] * len(off_replies)


def _system_scores(
    turns: Sequence[MtragTurn],
    replies: Sequence[Reply],
    qrels: Mapping[str, dict[str, int]],
    offtopic_abstained: Sequence[bool],
    seconds: float,
) -> dict[str, Any]:
    """One system's part of the report: abstention on the turns (and apart, on PARTIAL
    and CONVERSATIONAL ones), answer quality, off-topic abstention and time per turn."""
    pairs = [(t.answerability, r.abstained) for t, r in zip(turns, replies, strict=True)]
    rows = [
        (t, r, set(_gold(qrels, t.task_id)), qrels.get(t.task_id, {}))
        for t, r in zip(turns, replies, strict=True)
    ]
    apart = {
        label.lower(): _mean(1.0 if a else 0.0 for lab, a in pairs if lab == label)
        for label in ("PARTIAL", "CONVERSATIONAL")
    }
    return {
        "abstention": abstention_scores(pairs),
        "abstention_rate_apart": apart,
        "answerable": answer_scores(rows),
        "offtopic_abstention": _mean(1.0 if a else 0.0 for a in offtopic_abstained),
        "ms_per_turn": round(1000 * seconds / max(1, len(turns)), 2),
    }


def write_turns(
    path: Path,
    turns: Sequence[MtragTurn],
    replies: Sequence[Reply],
    qrels: Mapping[str, Mapping[str, int]],
    offtopic: Sequence[MtragTurn],
    off_replies: Sequence[Reply],
) -> None:
    """One JSON line per turn: its label, question, the query convrag searched for, its
    answer and whether it abstained, with its ROUGE-L recall and whether it cites a gold
    passage where the turn has a reference answer. Off-topic questions come last,
    labelled ``OFFTOPIC``. Two runs' files side by side show which answers a change
    moved."""
    rows = [
        *((t, r, t.answerability) for t, r in zip(turns, replies, strict=True)),
        *((t, r, "OFFTOPIC") for t, r in zip(offtopic, off_replies, strict=True)),
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        for turn, reply, label in rows:
            row: dict[str, Any] = {
                "task_id": turn.task_id,
                "answerability": label,
                "question": turn.question,
                "query": reply.query,
                "answer": reply.text,
                "abstained": reply.abstained,
                "signals": reply.signals,
            }
            if label != "OFFTOPIC" and turn.reference_answer:
                gold = set(_gold(qrels, turn.task_id))
                row["rougeL_recall"] = round(
                    rouge_l_recall(strip_markers(reply.text), turn.reference_answer), 4
                )
                row["cites_gold"] = bool(gold.intersection(reply.cited))
            fh.write(json.dumps(row) + "\n")
