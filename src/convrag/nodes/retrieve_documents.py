"""retrieve_documents: items a message names exactly ("explain question 6")."""

from __future__ import annotations

from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.retrieval.search import lookup_document_content
from convrag.state import DocumentHitsUpdate, State


async def retrieve_documents(state: State, runtime: Runtime[Context]) -> DocumentHitsUpdate:
    """Numbered items (question 6, section 2) looked up in the workspace's documents."""
    services = runtime.context.deps
    # The raw message names the item ("question 6"); the rewrite may also carry it.
    rows = await lookup_document_content(
        services.db,
        state["workspace_id"],
        f"{state['question']} {state.get('rewritten_query', '')}",
    )
    return DocumentHitsUpdate(document_hits=[r.as_source() for r in rows])
