"""web_search: the ``google_search`` tool through langchain-community's Serper wrapper.

It runs when the policy says so (requested, low retrieval confidence, a freshness cue) or
when the answering LLM called the tool. Results become numbered sources of type ``web``.
A search that fails or times out (its node policy) or finds nothing is recorded in
``flags.web_search_fallback`` (``error: ClientResponseError (HTTP 403)``, ``timeout``,
``no results``), so a turn answered without the web says why.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.events import SourcesEvent, emit
from convrag.ids import web_source_id
from convrag.records import Source, sources_out
from convrag.state import State, WebSearchUpdate

log = logging.getLogger(__name__)

MAX_WEB_SOURCES = 3

NO_RESULTS = "no results"
"""``flags.web_search_fallback`` of a search that answered with nothing usable."""


def searched(results: list[Source]) -> WebSearchUpdate:
    """The update of a search that ran (``results`` may be empty when it failed)."""
    return WebSearchUpdate(
        web_results=results,
        pending_web_query=None,
        web_search_done=True,
        flags={"web_search_triggered": True},
    )


def search_failed(_: State) -> Mapping[str, Any]:
    """The policy's fallback: no results, and the tool is not offered again this turn."""
    return searched([])


async def web_search(state: State, runtime: Runtime[Context]) -> WebSearchUpdate:
    """Search the web for the pending tool query, else the standalone question."""
    web = runtime.context.deps.web
    if web is None:  # the router never sends us here without a key
        raise RuntimeError("SERPER_API_KEY is not set")
    query = state.get("pending_web_query") or state.get("rewritten_query") or state["question"]
    found = await web.search(query)
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
    update = searched(results)
    if not results:
        log.warning("web search found nothing usable")
        update["flags"] = {**update["flags"], "web_search_fallback": NO_RESULTS}
    else:
        sources = list(state.get("sources", []))
        known = {s["id"] for s in sources}
        sources.extend(r for r in results[:MAX_WEB_SOURCES] if r["id"] not in known)
        update["sources"] = sources
        emit(runtime, SourcesEvent(event="sources", sources=sources_out(sources)))
    return update
