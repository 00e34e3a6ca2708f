"""retrieve_documents: items a message names exactly ("explain question 6")."""

from __future__ import annotations

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.records import Source
from convrag.search import lookup_document_content
from convrag.state import DocumentHitsUpdate, State


async def retrieve_documents(state: State, runtime: Runtime[Context]) -> DocumentHitsUpdate:
    """Numbered items (question 6, section 2) looked up in the workspace's documents."""
    services = runtime.context.deps
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
            page=r.page,
        )
        for r in rows
    ]
    return DocumentHitsUpdate(document_hits=hits)
