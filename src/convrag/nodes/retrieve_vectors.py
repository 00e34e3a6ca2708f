"""retrieve_vectors: hybrid dense + BM25 search, anchored to the last answer on a follow-up."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph.runtime import Runtime

from convrag.graph.context import Context
from convrag.graph.state import Source, State
from convrag.nodes._util import ms_since
from convrag.services import get_services


async def retrieve_vectors(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    start = time.perf_counter()
    ctx = runtime.context
    services = await get_services()
    anchors = (
        state.get("anchor_document_ids", []) if state.get("classification") == "follow_up" else []
    )
    hits: list[Source] = []
    errors: dict[str, str] = {}
    try:
        async with asyncio.timeout(ctx.retrieval_timeout_s):
            results = await services.searcher.search(
                state["workspace_id"],
                state.get("rewritten_query") or state["message"],
                top_k=max(2 * ctx.top_k, 10),
                anchor_document_ids=anchors,
                anchor_boost=ctx.anchor_boost,
            )
        hits = [
            Source(
                id=r.chunk_id,
                source_type="chunk",
                document_id=r.document_id,
                title=None,
                text=r.text,
                url=None,
                score=r.score,
                dense_score=r.dense_score,
                bm25_score=r.bm25_score,
                anchored=r.anchored,
            )
            for r in results
        ]
    except TimeoutError:
        errors["retrieve_vectors"] = "timeout"
    except Exception as exc:  # a failed source does not fail the turn
        errors["retrieve_vectors"] = f"{type(exc).__name__}: {exc}"[:300]
    return {"vector_hits": hits, "errors": errors, "timings": {"retrieve_vectors": ms_since(start)}}
