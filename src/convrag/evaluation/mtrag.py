"""MTRAG retrieval evaluation: baselines and convrag's own pipeline, side by side.

The pooled corpus is ingested (idempotently) into a workspace of its own. Every turn
that has qrels is scored with Recall@1/3/5/10 and nDCG@5/10. convrag's strategy runs the
service's real graph (load_history with the turn's history, rewrite, both retrievers),
stops before synthesis and merges the sources as synthesis does: no copy of the pipeline.

Follow-up vs standalone comes from the dataset's own ``multi_turn`` label (Follow-up or
Clarification vs N/A), not from convrag's classifier, so every strategy is split the same
way.
"""

from __future__ import annotations

import csv
import gzip
import json
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from langgraph.checkpoint.memory import InMemorySaver

from convrag.context import Context
from convrag.documents.base import SourceDocument
from convrag.evaluation.metrics import mean_scores, retrieval_scores
from convrag.evaluation.reference_llm import reference_llm
from convrag.graph import build_graph
from convrag.ids import document_id_for
from convrag.ingest import ingest_documents
from convrag.nodes.synthesize import merged_sources, retrieves
from convrag.records import HistoryTurn
from convrag.services import Services
from convrag.state import InputState, State
from convrag.text.entities import extract_entities

BASELINES = (
    "bm25_lastturn",
    "dense_lastturn",
    "hybrid_lastturn",
    "bm25_rewrite_llm",
    "dense_rewrite_llm",
    "hybrid_rewrite_llm",
    "hybrid_all_questions",
)


CONVRAG_STRATEGIES = (
    "convrag",
    "convrag_no_anchor",
    "convrag_lastturn",
    "convrag_rewrite_llm",
    "convrag_llm_reference",
)
"""convrag's own strategies that run without an LLM (``convrag_llm`` needs one):
``convrag_llm_reference`` runs the graph's LLM path with a stand-in that rewrites as
MTRAG's reference does."""


@dataclass(frozen=True)
class MtragTurn:
    task_id: str
    question: str
    rewrite_llm: str | None
    followup: bool
    history: list[dict[str, str]]
    prev_passages: list[str]
    all_questions: str
    turn: int = 1
    reference_answer: str | None = None
    answerability: str = "ANSWERABLE"
    """ANSWERABLE, UNANSWERABLE, PARTIAL or CONVERSATIONAL (the dataset's label)."""


def domain_path(data: Path, domain: str) -> Path:
    """The folder of ``domain`` under ``data`` (or ``data`` itself), checked to hold the
    MTRAG files; ValueError names the missing one."""
    path = data / domain if (data / domain).is_dir() else data
    for name in ("turns.jsonl", "qrels.tsv", "corpus.jsonl.gz"):
        if not (path / name).exists():
            raise ValueError(
                f"{path / name} not found: --data must hold <domain>/{name} "
                "(the MTRAG layout of ../shared/bench/mtrag)"
            )
    return path


def load_domain(
    path: Path, *, judged_only: bool = True
) -> tuple[list[MtragTurn], dict[str, dict[str, int]]]:
    """The turns (only those with qrels unless ``judged_only`` is false) and the qrels."""
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    if judged_only or (path / "qrels.tsv").exists():
        with open(path / "qrels.tsv", newline="") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                qrels[row["query-id"]][row["corpus-id"]] = int(row["score"])
    turns: list[MtragTurn] = []
    with open(path / "turns.jsonl") as fh:
        records = [json.loads(line) for line in fh if line.strip()]
    for r in records:
        if judged_only and r["task_id"] not in qrels:
            continue
        users = [h["text"] for h in r["history"] if h["speaker"] == "user"]
        turns.append(
            MtragTurn(
                task_id=r["task_id"],
                question=r["question"],
                rewrite_llm=r.get("rewrite_llm"),
                followup=any(
                    m in ("Follow-up", "Clarification") for m in r.get("multi_turn") or []
                ),
                history=r["history"],
                prev_passages=list(r.get("prev_turn_relevant_passage_ids") or []),
                all_questions=" ".join([*users, r["question"]]),
                turn=int(r.get("turn") or len(users) + 1),
                reference_answer=r.get("reference_answer") or None,
                answerability=(r.get("answerability") or ["ANSWERABLE"])[0],
            )
        )
    return turns, dict(qrels)


def corpus_file(path: Path) -> Path:
    """A domain's ``corpus.jsonl.gz``; a file that holds a relative path instead (a
    symbolic link stored as text, as MTRAG-UN's folders point to MTRAG's corpora) is
    followed."""
    file = path / "corpus.jsonl.gz"
    with file.open("rb") as fh:
        head = fh.read(2)
    if head == b"\x1f\x8b" or file.stat().st_size > 4096:
        return file
    target = (path / file.read_text(encoding="utf-8").strip()).resolve()
    if not target.is_file():
        raise FileNotFoundError(f"{file} points to {target}, which is not there")
    return target


def load_corpus(path: Path) -> list[SourceDocument]:
    docs = []
    with gzip.open(corpus_file(path), "rt") as fh:
        for line in fh:
            r = json.loads(line)
            docs.append(
                SourceDocument(
                    str(r["_id"]), r.get("title") or None, r["text"], {"doc_id": r.get("doc_id")}
                )
            )
    return docs


def history_turns(
    turn: MtragTurn, workspace: str, titles: Mapping[str, str | None] | None = None
) -> list[HistoryTurn]:
    """MTRAG's history as convrag history; the last answer is anchored to the passages
    behind it (``prev_turn_relevant_passage_ids``), as the graph anchors a follow-up to
    the documents the previous answer cited, and cites their ``titles`` (by passage id)."""
    out: list[HistoryTurn] = []
    pending: str | None = None
    for h in turn.history:
        if h["speaker"] == "user":
            pending = h["text"]
        elif pending is not None:
            out.append(
                HistoryTurn(
                    turn_number=len(out) + 1,
                    question=pending,
                    answer=h["text"],
                    contextualized_query=None,
                    entities=extract_entities(h["text"]),
                    cited_document_ids=[],
                )
            )
            pending = None
    if out:
        out[-1]["cited_document_ids"] = [document_id_for(workspace, p) for p in turn.prev_passages]
        named = [(titles or {}).get(p) for p in turn.prev_passages]
        out[-1]["cited_titles"] = list(dict.fromkeys(t for t in named if t))
    return out


class MtragEvaluation:
    """Runs every strategy over the turns of one domain."""

    def __init__(
        self,
        services: Services,
        workspace: str,
        depth: int = 10,
        *,
        answers: bool = False,
        overrides: Mapping[str, Any] | None = None,
    ) -> None:
        """``answers``: run whole turns (synthesis included) with the service's own
        defaults, instead of stopping after retrieval with a deep source list.
        ``overrides``: context knobs set for every graph run (``--set``), to fit a default
        on one domain and test it on another."""
        self.services = services
        self.workspace = workspace
        self.depth = depth
        self.answers = answers
        self.overrides = dict(overrides or {})
        self.passage_of: dict[str, str] = {}
        self.title_of: dict[str, str | None] = {}
        self.graph = build_graph(services).compile(
            checkpointer=InMemorySaver(),
            interrupt_before=[] if answers else ["synthesize"],
        )

    async def prepare(self, corpus: list[SourceDocument], progress: Callable[[int], None]) -> None:
        """Ingest the pool (unchanged documents are skipped) and load the engines;
        ``progress`` gets the documents done so far."""
        done = 0

        def advance(batch: int) -> None:
            nonlocal done
            done += batch
            progress(done)

        await ingest_documents(self.services, self.workspace, corpus, progress=advance)
        self.title_of = {d.source: d.title for d in corpus}
        # Load the in-process engines before the first turn: a cold load of a large pool
        # takes longer than a turn's retrieval time limit.
        await self.services.searcher.warm(self.workspace)
        for d in await self.services.db.documents.list_documents(self.workspace):
            self.passage_of[str(d["id"])] = str(d["source"])

    def passages(self, document_ids: Sequence[str]) -> list[str]:
        seen: list[str] = []
        for d in document_ids:
            p = self.passage_of.get(d)
            if p is not None and p not in seen:
                seen.append(p)
            if len(seen) >= self.depth:
                break
        return seen

    async def search(self, query: str, mode: str) -> list[str]:
        hits = await self.services.searcher.search(
            self.workspace,
            query,
            top_k=4 * self.depth,
            mode=mode,  # type: ignore[arg-type]
        )
        return self.passages([h.document_id for h in hits])

    async def run_graph(
        self,
        turn: MtragTurn,
        *,
        anchored: bool,
        llm: str | None,
        message: str | None = None,
        with_history: bool = True,
    ) -> dict[str, Any]:
        """The graph's state for ``turn``: after retrieval, or after the whole turn when
        the evaluation scores answers."""
        history = history_turns(turn, self.workspace, self.title_of) if with_history else []
        if not anchored and history:
            history[-1]["cited_document_ids"] = []
        knobs: dict[str, Any] = {"llm_model": llm, "web_search": "off"}
        if not self.answers:
            # Only the sources are scored: no "not found" evidence to weigh.
            knobs |= {
                "top_k": 4 * self.depth,
                "context_budget_chars": 10**7,
                "policy": {"answer_threshold": 0.0},
            }
        ctx = Context(
            workspace_id=self.workspace,
            services=self.services,
            **_with_overrides(knobs, self.overrides),
        )
        thread_id = str(uuid.uuid4())
        payload = InputState(
            message=message or turn.question,
            conversation_id=thread_id,
            history_override=history,
        )
        state: dict[str, Any] = await self.graph.ainvoke(
            payload, {"configurable": {"thread_id": thread_id}}, context=ctx
        )
        if not self.answers and retrieves(cast(State, state), ctx):
            state.update(await merged_sources(cast(State, state), ctx))
        return state

    async def pipeline(self, turn: MtragTurn, **how: Any) -> list[str]:
        """The passages behind the graph's sources; ``how`` as for :meth:`run_graph`."""
        state = await self.run_graph(turn, **how)
        return self.passages([s["document_id"] or "" for s in state.get("sources", [])])

    async def rank(self, strategy: str, turn: MtragTurn, llm_model: str | None) -> list[str]:
        rewrite = turn.rewrite_llm or turn.question
        match strategy:
            case "bm25_lastturn":
                return await self.search(turn.question, "bm25")
            case "dense_lastturn":
                return await self.search(turn.question, "dense")
            case "dense_rewrite_llm":
                return await self.search(rewrite, "dense")
            case "hybrid_lastturn":
                return await self.search(turn.question, "hybrid")
            case "bm25_rewrite_llm":
                return await self.search(rewrite, "bm25")
            case "hybrid_rewrite_llm":
                return await self.search(rewrite, "hybrid")
            case "hybrid_all_questions":
                return await self.search(turn.all_questions, "hybrid")
            case "convrag":
                return await self.pipeline(turn, anchored=True, llm="none")
            case "convrag_no_anchor":
                return await self.pipeline(turn, anchored=False, llm="none")
            case "convrag_lastturn":
                return await self.pipeline(turn, anchored=False, llm="none", with_history=False)
            case "convrag_rewrite_llm":
                return await self.pipeline(
                    turn, anchored=False, llm="none", message=rewrite, with_history=False
                )
            case "convrag_llm" | "convrag_llm_reference":
                return await self.pipeline(turn, anchored=True, llm=llm_model)
        raise ValueError(f"unknown strategy {strategy!r}")


def _model_for(
    strategy: str, services: Services, turns: Sequence[MtragTurn], llm: str | None
) -> AbstractContextManager[str | None]:
    """The LLM a strategy runs with: the stand-in that rewrites as MTRAG's reference does
    (:mod:`convrag.evaluation.reference_llm`) for ``convrag_llm_reference``, served for
    the strategy's turns, else the configured one."""
    if strategy == "convrag_llm_reference":
        return reference_llm(services, turns)
    return nullcontext(llm)


async def evaluate_mtrag(
    services: Services,
    data: Path,
    domain: str,
    *,
    strategies: Sequence[str] | None = None,
    limit: int | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Score every strategy; returns the documented JSON shape. ``overrides`` sets
    context knobs for convrag's strategies (the baselines do not run the graph)."""
    path = domain_path(data, domain)
    turns, qrels = load_domain(path)
    if limit:
        turns = turns[:limit]
    llm = services.settings.effective_llm_model
    names = list(strategies or [*BASELINES, *CONVRAG_STRATEGIES])
    if strategies is None and llm:
        names.append("convrag_llm")
    workspace = f"mtrag-{path.name}"
    ev = MtragEvaluation(services, workspace, overrides=overrides)
    corpus = load_corpus(path)
    started = time.perf_counter()
    await ev.prepare(corpus, lambda n: progress("ingest", n, len(corpus)) if progress else None)
    ingest_s = time.perf_counter() - started
    per: dict[str, dict[str, list[dict[str, float]]]] = {
        s: {"all": [], "followup": [], "standalone": []} for s in names
    }
    timing: dict[str, float] = {}
    for name in names:
        t0 = time.perf_counter()
        with _model_for(name, services, turns, llm) as model:
            for i, turn in enumerate(turns, 1):
                ranked = await ev.rank(name, turn, model)
                scores = retrieval_scores(ranked, qrels[turn.task_id])
                per[name]["all"].append(scores)
                per[name]["followup" if turn.followup else "standalone"].append(scores)
                if progress:
                    progress(name, i, len(turns))
        timing[name] = round((time.perf_counter() - t0) * 1000 / max(1, len(turns)), 2)
    return {
        "dataset": f"MTRAG (pooled) {path.name}",
        "n_turns": len(turns),
        "n_followup": sum(t.followup for t in turns),
        "n_standalone": sum(not t.followup for t in turns),
        "corpus_passages": len(corpus),
        "ingest_seconds": round(ingest_s, 1),
        "embedder": services.settings.embedding_model,
        # The one convrag's strategies ran with (the baselines never rerank).
        "reranker": "none" if services.reranker is None else f"http:{services.reranker.url}",
        "retrieval_policy": services.policy.as_dict(),
        "context_overrides": dict(overrides or {}),
        "ms_per_turn": timing,
        "strategies": {
            n: {split: mean_scores(rows) for split, rows in per[n].items()} for n in names
        },
    }


def _with_overrides(knobs: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``knobs`` with ``overrides`` over them, their retrieval policy changes merged."""
    policy = {**knobs.get("policy", {}), **overrides.get("policy", {})}
    return {**knobs, **overrides, **({"policy": policy} if policy else {})}
