"""retrieve_documents: seed 001's document-content source ("explain question 6")."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langgraph.runtime import Runtime

from convrag.graph.context import Context
from convrag.graph.state import Source, State
from convrag.nodes._util import ms_since
from convrag.services import get_services
from convrag.tools.retrievers import lookup_document_content


async def retrieve_documents(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    start = time.perf_counter()
    services = await get_services()
    hits: list[Source] = []
    errors: dict[str, str] = {}
    try:
        async with asyncio.timeout(runtime.context.retrieval_timeout_s):
            # The raw message names the item ("question 6"); the rewrite may also carry it.
            rows = await lookup_document_content(
                services.db,
                state["workspace_id"],
                f"{state['message']} {state.get('rewritten_query', '')}",
            )
        hits = [
            Source(
                id=r.id,
                source_type="document",
                document_id=r.document_id,
                title=r.title,
                text=r.text,
                url=None,
                score=1.0,
            )
            for r in rows
        ]
    except TimeoutError:
        errors["retrieve_documents"] = "timeout"
    except Exception as exc:  # a failed source does not fail the turn
        errors["retrieve_documents"] = f"{type(exc).__name__}: {exc}"[:300]
    return {
        "document_hits": hits,
        "errors": errors,
        "timings": {"retrieve_documents": ms_since(start)},
    }
