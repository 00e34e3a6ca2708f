"""load_history: the last N turns from Postgres and the documents the last answer cited."""

from __future__ import annotations

import time
import uuid
from typing import Any

from langgraph.config import get_config
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from convrag.graph.context import Context
from convrag.graph.state import HistoryTurn, State
from convrag.nodes._util import conversation_uuid, ms_since, workspace_of
from convrag.services import get_services
from convrag.stores.vectors import check_id


async def load_history(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Start a turn: validate ids, load history and anchors, reset per-turn fields."""
    start = time.perf_counter()
    message = (state.get("message") or "").strip()
    if not message:
        raise ValueError("message is empty")
    workspace_id = check_id(workspace_of(state, runtime))
    raw_conv = state.get("conversation_id") or get_config()["configurable"].get("thread_id")
    if not raw_conv:
        raise ValueError("conversation_id (or a thread_id) is required")
    conversation_id = conversation_uuid(str(raw_conv))
    services = await get_services()
    services.searcher.prefetch(message)  # overlaps the history round trip and the rewrite
    turns = await services.db.open_conversation(
        workspace_id, conversation_id, runtime.context.history_turns
    )
    if turns is None:
        raise PermissionError(f"conversation {conversation_id} is not in workspace {workspace_id}")
    limit = runtime.context.history_turns
    override = state.get("history_override")
    if override is not None:
        history = list(override)[-limit:]
        anchors = list(dict.fromkeys(history[-1]["cited_document_ids"])) if history else []
        return _start(state, message, workspace_id, conversation_id, history, anchors, start)
    history = [
        HistoryTurn(
            turn_number=t.turn_number,
            question=t.question,
            answer=t.answer,
            contextualized_query=t.contextualized_query,
            entities=list(t.entities_mentioned),
            cited_document_ids=[
                s["document_id"] for s in t.sources if s.get("cited") and s.get("document_id")
            ],
        )
        for t in turns
    ]
    anchors = list(dict.fromkeys(history[-1]["cited_document_ids"])) if history else []
    return _start(state, message, workspace_id, conversation_id, history, anchors, start)


def _start(
    state: State,
    message: str,
    workspace_id: str,
    conversation_id: str,
    history: list[HistoryTurn],
    anchors: list[str],
    start: float,
) -> dict[str, Any]:
    """The turn's first update: ids, history, and every per-turn field reset."""
    return {
        "message": message,
        "workspace_id": workspace_id,
        "conversation_id": conversation_id,
        "turn_id": str(uuid.uuid4()),
        "history": history,
        "anchor_document_ids": anchors,
        "document_hits": [],
        "vector_hits": [],
        "sources": [],
        "retrieval_confidence": 0.0,
        "web_search_reason": None,
        "web_results": [],
        "pending_web_query": None,
        "web_search_done": False,
        "draft": "",
        "drafts": [],
        "answer": "",
        "citations": [],
        "entities": [],
        "excluded_entities": [],
        "regenerations": 0,
        "persisted": False,
        "flags": Overwrite({}),
        "errors": Overwrite({}),
        "history_override": None,
        "timings": Overwrite({"load_history": ms_since(start)}),
    }
