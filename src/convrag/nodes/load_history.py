"""load_history: start a turn with the last N turns and the documents the last answer cited."""

from __future__ import annotations

import uuid

from langgraph.config import get_config
from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.ids import check_id, conversation_uuid
from convrag.records import HistoryTurn, previous_question
from convrag.state import LoadHistoryUpdate, State


async def load_history(state: State, runtime: Runtime[Context]) -> LoadHistoryUpdate:
    """Validate the ids, load history and anchors, and fix the turn's id.

    Every per-turn field is reset by the node's policy (``starts_turn``), not here.
    """
    message = (state.get("message") or "").strip()
    if not message:
        raise ValueError("message is empty")
    ctx = runtime.context
    workspace_id = check_id(ctx.workspace_id)
    raw_conv = state.get("conversation_id") or get_config()["configurable"].get("thread_id")
    if not raw_conv:
        raise ValueError("conversation_id (or a thread_id) is required")
    conversation_id = conversation_uuid(str(raw_conv))
    services = ctx.deps
    services.searcher.prefetch(message)  # overlaps the history round trip and the rewrite
    turns = await services.db.open_conversation(
        workspace_id, conversation_id, ctx.history_turns, create=ctx.create_conversation
    )
    if turns is None:
        raise PermissionError(f"conversation {conversation_id} is not in workspace {workspace_id}")
    override = state.get("history_override")
    if override is not None:
        history = list(override)[-ctx.history_turns :]
    else:
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
    previous = previous_question(history)
    if previous is not None and ctx.history_weight > 0.0:
        services.searcher.prefetch(previous)  # the dense query mixes it in
    return LoadHistoryUpdate(
        message=message,
        workspace_id=workspace_id,
        conversation_id=conversation_id,
        turn_id=str(uuid.uuid4()),
        history=history,
        anchor_document_ids=anchors,
    )
