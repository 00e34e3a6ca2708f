"""load_history: start a turn with the last N turns and the documents the last answer cited."""

from __future__ import annotations

import uuid

from langgraph.config import get_config
from langgraph.runtime import Runtime

from convrag.context import Context
from convrag.errors import BEING_DELETED, ConversationBusy, ConversationInUse, TurnConflict
from convrag.ids import check_id, conversation_uuid, is_uuid
from convrag.records import HistoryTurn, previous_question
from convrag.state import LoadHistoryUpdate, State
from convrag.stores.records import TurnRecord, TurnStart


def history_turn(turn: TurnRecord) -> HistoryTurn:
    """A stored turn as the graph reads it back, with the documents its answer cited."""
    cited = [s for s in turn.sources if s.cited]
    return HistoryTurn(
        turn_number=turn.turn_number,
        question=turn.question,
        answer=turn.answer,
        contextualized_query=turn.contextualized_query,
        entities=list(turn.entities_mentioned),
        cited_document_ids=[s.document_id for s in cited if s.document_id],
        cited_chunk_ids=[s.id for s in cited if s.type != "web"],
        cited_titles=list(dict.fromkeys(s.title for s in cited if s.title)),
    )


async def load_history(state: State, runtime: Runtime[Context]) -> LoadHistoryUpdate:
    """Validate the ids, store the question as a ``processing`` turn, load history and
    anchors, and fix the turn's id.

    The turn's row exists from here on, so a failed or interrupted turn keeps its
    question; ``persist`` completes it. Storing it and reading the history is one round
    trip (time to first token waits on it). The turn id is the caller's
    (``turn_request``: a retry with the same idempotency key maps to the same turn) or a
    new one. Every per-turn field is reset by the node's policy (``starts_turn``), not
    here. A thread id other than the conversation's own (a name such as ``"my-chat"``,
    whose UUID5 the conversation is) is recorded with the conversation, whose deletion
    then deletes that thread's checkpoints too. A conversation whose delete is under way,
    in any process, takes no turn (:class:`~convrag.errors.ConversationInUse`).
    """
    message = _message(state)
    ctx = runtime.context
    workspace_id = check_id(ctx.workspace_id)
    thread_id = get_config()["configurable"].get("thread_id")
    raw_conv = state.get("conversation_id") or thread_id
    if not raw_conv:
        raise ValueError("conversation_id (or a thread_id) is required")
    conversation_id = conversation_uuid(str(raw_conv))
    services = ctx.deps
    # Every turn that searches searches the message as typed (a first or standalone
    # turn's query, a follow-up's raw list): embedding it now overlaps the history round
    # trip and the rewrite (with an LLM, its call).
    services.searcher.prefetch(message)
    request = state.get("turn_request") or None
    turn_id = request["turn_id"] if request else str(uuid.uuid4())
    if not is_uuid(turn_id):
        raise ValueError(f"turn_id: {turn_id[:60]!r} is not a UUID")
    started = await services.db.turns.start_turn(
        TurnStart(
            workspace_id=workspace_id,
            conversation_id=conversation_id,
            turn_id=turn_id.lower(),
            question=message,
            idempotency_key=request.get("idempotency_key") if request else None,
            create=ctx.create_conversation,
        ),
        ctx.history_turns,
    )
    if started is None:
        raise PermissionError(f"conversation {conversation_id} is not in workspace {workspace_id}")
    if not started.started:
        if started.deleting:  # by any process: its delete marked it in the database
            raise ConversationInUse(BEING_DELETED)
        if started.busy and started.prior is None:
            raise ConversationBusy()
        raise TurnConflict(turn_id, started.prior)
    if thread_id is not None and str(thread_id) != conversation_id:
        # The checkpointer keys this thread by its own id, not the conversation's:
        # deleting the conversation must know it (one more round trip, only then).
        await services.db.conversations.record_thread(conversation_id, str(thread_id))
    turns = started.history
    override = state.get("history_override")
    if override is not None:
        history = list(override)[-ctx.history_turns :]
    else:
        history = [history_turn(t) for t in turns]
    anchors = list(dict.fromkeys(history[-1]["cited_document_ids"])) if history else []
    previous = previous_question(history)
    if previous is not None and ctx.retrieval_policy.history_weight > 0.0:
        services.searcher.prefetch(previous)  # the dense query mixes it in
    return LoadHistoryUpdate(
        question=message,
        workspace_id=workspace_id,
        conversation_id=conversation_id,
        turn_id=turn_id.lower(),
        history=history,
        anchor_document_ids=anchors,
    )


def _message(state: State) -> str:
    """The run's message, stripped, or a ``ValueError`` saying what a turn needs.

    The message is ephemeral (:class:`~convrag.state.InputState`): it is here only when
    this run's input held one, never left over from the thread's previous turn.
    """
    if "message" not in state:
        raise ValueError(
            "the run's input has no 'message': send {'message': '...'} with the question"
        )
    sent: object = state["message"]
    if not isinstance(sent, str):
        raise ValueError(f"message: expected a string, got {type(sent).__name__}")
    message = sent.strip()
    if not message:
        raise ValueError("message is empty")
    return message
