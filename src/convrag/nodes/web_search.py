"""web_search: the ``google_search`` tool through langchain-community's Serper wrapper.

It runs when the policy says so (requested, low retrieval confidence, a freshness cue) or
when the answering LLM called the tool. Results become numbered sources of type ``web``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph.runtime import Runtime

from convrag.graph.context import Context
from convrag.graph.state import Source, State
from convrag.nodes._util import emit, ms_since
from convrag.nodes.merge_context import _public
from convrag.services import get_services
from convrag.tools.web_search import web_source_id


async def web_search(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    start = time.perf_counter()
    services = await get_services()
    query = state.get("pending_web_query") or state.get("rewritten_query") or state["message"]
    results: list[Source] = []
    errors: dict[str, str] = {}
    if services.web is None:  # the router never sends us here without a key
        errors["web_search"] = "SERPER_API_KEY is not set"
    else:
        try:
            async with asyncio.timeout(runtime.context.web_timeout_s):
                found = await services.web.search(query)
            results = [
                Source(
                    id=web_source_id(h["url"]),
                    source_type="web",
                    document_id=None,
                    title=h["title"],
                    text=h["snippet"],
                    url=h["url"],
                    score=0.0,
                )
                for h in found
                if h["snippet"]
            ]
        except TimeoutError:
            errors["web_search"] = "timeout"
        except Exception as exc:  # a failed search does not fail the turn
            errors["web_search"] = f"{type(exc).__name__}: {exc}"[:300]
    sources = list(state.get("sources", []))
    known = {s["id"] for s in sources}
    for r in results[:3]:
        if r["id"] not in known:
            sources.append(r)
    if results:
        emit(runtime, "sources", sources=[_public(n, s) for n, s in enumerate(sources, start=1)])
    return {
        "web_results": results,
        "sources": sources,
        "pending_web_query": None,
        "web_search_done": True,
        "flags": {"web_search_triggered": True},
        "errors": errors,
        "timings": {"web_search": ms_since(start)},
    }
