"""Would rescoring the fused candidates by their closest sentence find more gold passages?

    CONVRAG_DATA_DIR=bench-out/data python benchmarks/sentence_rescore.py --domain clapnq
    CONVRAG_DATA_DIR=bench-out/data python benchmarks/sentence_rescore.py --domain clapnq \\
        --rewrite
    CONVRAG_DATA_DIR=bench-out/data-cloud python benchmarks/sentence_rescore.py --domain cloud

Every MTRAG turn with qrels runs through the real graph as ``convrag eval mtrag`` runs
``convrag`` (the dataset's history, anchored; the pool ingested into ``mtrag-<domain>`` if
it is not there yet), or, with ``--rewrite``, as it runs ``convrag_rewrite_llm`` (the
official rewrite, no history). The first ``--top-n`` sources are then reordered by

    (1 - a) * 60 / (60 + rank) + a * (the cosine of the chunk's closest sentence)

with the sentences embedded by the service's own embedder, for each ``a`` of ``--alpha``;
``a`` = 0 is the stack's own order. It prints R@5 for each. The sentences are embedded at
query time here (about 150 a turn), which is why the stage is not in the service: it
would need the sentence vectors stored at ingest.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import numpy as np

from convrag.config import get_settings
from convrag.evaluation import mtrag
from convrag.evaluation.metrics import retrieval_scores
from convrag.retrieval.policy import default_policy
from convrag.retrieval.ranking import ranked_by_words
from convrag.services import open_services
from convrag.text.units import sentences

QUESTION_TO_ANSWER = default_policy().question_to_answer


async def rescore(
    data: Path, domain: str, rewrite: bool, top_n: int, alphas: list[float], signal: str
) -> None:
    async with open_services(get_settings()) as services:
        path = mtrag.domain_path(data, domain)
        turns, qrels = mtrag.load_domain(path)
        ev = mtrag.MtragEvaluation(services, f"mtrag-{path.name}")
        await ev.prepare(mtrag.load_corpus(path), lambda n: None)
        recall: dict[float, list[float]] = {a: [] for a in [0.0, *alphas]}
        for turn in turns:
            if rewrite:
                state = await ev.run_graph(
                    turn,
                    anchored=False,
                    llm="none",
                    message=turn.rewrite_llm or turn.question,
                    with_history=False,
                )
            else:
                state = await ev.run_graph(turn, anchored=True, llm="none")
            query = state.get("rewritten_query") or turn.question
            sources = state.get("sources", [])[:top_n]
            units = [
                [u for u in sentences(s["text"]) if len(u.split()) > 3] or [s["text"]]
                for s in sources
            ]
            flat = [u for group in units for u in group]
            closest: list[float] = []
            if signal == "words":
                best: dict[int, float] = {}
                for score, n, _, _ in ranked_by_words(
                    query, sources, question_to_answer=QUESTION_TO_ANSWER
                ):
                    best[n] = max(best.get(n, 0.0), score)
                top = max(best.values(), default=1.0)
                closest = [best.get(n, 0.0) / top for n in range(1, len(sources) + 1)]
            elif flat:
                vectors = services.sentences.embed([query, *flat])
                cosines = vectors[1:] @ vectors[0]
                start = 0
                for group in units:
                    closest.append(float(cosines[start : start + len(group)].max()))
                    start += len(group)
            prior = np.array([60 / (60 + r) for r in range(len(sources))])
            for a in recall:
                score = (1 - a) * prior + a * np.array(closest)
                order = [sources[k]["document_id"] or "" for k in np.argsort(-score, kind="stable")]
                ranked = ev.passages(order)
                recall[a].append(retrieval_scores(ranked, qrels[turn.task_id])["R@5"])
        how = ("official rewrite" if rewrite else "convrag") + f", {signal}"
        for a, values in recall.items():
            print(f"{domain} {how} a={a:.1f} R@5 {np.mean(values):.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/bench/mtrag"))
    parser.add_argument("--domain", default="clapnq")
    parser.add_argument("--rewrite", action="store_true", help="feed the official rewrite")
    parser.add_argument("--top-n", type=int, default=30)
    parser.add_argument("--alpha", type=float, nargs="+", default=[0.3, 0.5, 0.7, 1.0])
    parser.add_argument(
        "--signal",
        choices=["cosine", "words"],
        default="cosine",
        help="the closest sentence by the embedder's cosine, or by the extractive answer's "
        "word score (shared IDF over length, as a share of the best source's)",
    )
    args = parser.parse_args()
    asyncio.run(rescore(args.data, args.domain, args.rewrite, args.top_n, args.alpha, args.signal))


if __name__ == "__main__":
    main()
