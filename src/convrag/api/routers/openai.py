"""``POST /v1/chat/completions``: OpenAI's chat completions API over the same turns.

An OpenAI client sends the whole history with each request, so each request is a new
conversation whose history comes from its ``messages``, not from stored turns. Replies
carry the usual fields plus ``citations``, ``sources`` and ``conversation_id``; streamed
chunks follow OpenAI's format, ending with ``data: [DONE]``, and the final one carries
``citations``, ``no_answer``, ``answer`` and ``conversation_id`` (no ``sources``).

``usage`` counts the tokens that the turn's LLM calls reported (LangChain's
``usage_metadata`` of each reply: the rewrite, the answer and any regeneration, summed),
and is 0 when no LLM ran or none reported usage. Streamed, it comes in a last chunk with
no choices when the request asks for it with ``stream_options: {"include_usage": true}``,
as OpenAI does.

Streaming and discarded drafts: a turn may drop the text it streamed (``reset``: the LLM
failed mid-answer; ``repetition``: the answer is regenerated), and an OpenAI chunk
cannot take text back. Tokens are forwarded as they come, with no delay; when the turn
drops its draft, the stream sends a chunk with an empty delta, ``"convrag_reset": true``
and ``convrag_reset_reason`` (``reset``, ``repetition``, or ``final_answer`` for the one
below), and the next draft's tokens follow. Clients that know the field clear the text
shown so far; others show both drafts one after the other. At the end, if the text
streamed since the last reset is not the stored answer (the turn kept an earlier draft,
or dropped markers that cite nothing), one more ``convrag_reset`` chunk and the stored
answer in one chunk follow: the text after the last ``convrag_reset`` is always the
answer that was stored. The final chunk also carries that ``answer``, and the
non-streaming reply is the stored answer alone. While no event comes for
``SSE_KEEPALIVE_S`` seconds the stream sends ``: keep-alive`` SSE comments, which OpenAI
clients skip.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any

from fastapi import APIRouter, HTTPException, Response
from fastapi.responses import JSONResponse, StreamingResponse
from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.tracers.context import register_configure_hook

from convrag.api.deps import RunnerDep, ServicesDep, SettingsDep, WorkspaceDep
from convrag.api.schemas import (
    MAX_MESSAGE_CHARS,
    ChatCompletionIn,
    RagOptions,
    UsageOut,
    error_responses,
    keyed_route_responses,
)
from convrag.api.turns import (
    KEEPALIVE,
    KEEPALIVE_COMMENT,
    SSE_HEADERS,
    answer_out,
    drain,
    turn_context,
)
from convrag.records import HistoryTurn
from convrag.state import InputState
from convrag.text.entities import extract_entities

router = APIRouter(tags=["openai"], responses=keyed_route_responses())

MODEL_ID = "convrag"
"""The one model this endpoint serves: the workspace's conversational RAG."""

_TURN_USAGE: ContextVar[UsageMetadataCallbackHandler | None] = ContextVar(
    "convrag_turn_usage", default=None
)
"""The usage counter of the turn being started. LangChain adds the handler in this
variable to every chat model call made in its context; a turn's task copies the context
it was created in, so each turn counts its own calls and no other's. Registered once
(``get_usage_metadata_callback`` registers a new hook on every use)."""
register_configure_hook(_TURN_USAGE, inheritable=True)


def usage_of(counter: UsageMetadataCallbackHandler) -> UsageOut:
    """The OpenAI ``usage`` of a turn: its LLM calls' reported tokens, over all models."""
    reports = list(counter.usage_metadata.values())
    return UsageOut(
        prompt_tokens=sum(u.get("input_tokens", 0) for u in reports),
        completion_tokens=sum(u.get("output_tokens", 0) for u in reports),
        total_tokens=sum(u.get("total_tokens", 0) for u in reports),
    )


@router.get("/v1/models")
async def list_models(workspace: WorkspaceDep) -> dict[str, Any]:
    """The models list OpenAI-compatible chat clients ask for first."""
    return {
        "object": "list",
        "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "convrag"}],
    }


@router.post(
    "/v1/chat/completions",
    responses={
        200: {
            "content": {"application/json": {}, "text/event-stream": {}},
            "description": "A `chat.completion` object, or with `stream: true` its "
            "`chat.completion.chunk`s as server-sent events ending with `data: [DONE]`.",
        },
        **error_responses(
            {
                422: "`messages` empty or not ending with a user message of 1 to 8,000 "
                "characters, or a field of the wrong type."
            }
        ),
    },
)
async def chat_completions(
    body: ChatCompletionIn,
    workspace: WorkspaceDep,
    services: ServicesDep,
    runner: RunnerDep,
    settings: SettingsDep,
) -> Response:
    """OpenAI's chat completions shape; the history comes from the request's messages.

    Streamed, a dropped draft is announced with a ``"convrag_reset": true`` chunk and the
    text after the last one is the stored answer (see the module's docstring); the
    non-streaming reply is the stored answer.
    """
    turns, question = _history_from_messages(body)
    if not question or len(question) > MAX_MESSAGE_CHARS:
        raise HTTPException(
            422,
            "messages: the last message must be a user message of 1 to "
            f"{MAX_MESSAGE_CHARS} characters",
        )
    conversation_id = await services.db.create_conversation(workspace)
    payload = InputState(message=question, conversation_id=conversation_id, history_override=turns)
    rag = body.workspace_rag or RagOptions()
    context = turn_context(workspace, rag, runner.assistant.services)
    counter = UsageMetadataCallbackHandler()
    token = _TURN_USAGE.set(counter)
    try:  # the turn's task is created here, in a context that holds its counter
        queue, task = await runner.start(conversation_id, payload, context)
    finally:
        _TURN_USAGE.reset(token)
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if not body.stream:
        async for _ in drain(queue):
            pass
        answer = answer_out(conversation_id, await task)
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": body.model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": answer.answer},
                    }
                ],
                "usage": usage_of(counter).model_dump(),
                "citations": [c.model_dump() for c in answer.citations],
                "no_answer": answer.no_answer,
                "sources": answer.sources,
                "conversation_id": conversation_id,
            }
        )

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        data = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": body.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(data, default=str)}\n\n"

    async def stream() -> AsyncIterator[str]:
        yield chunk({"role": "assistant", "content": ""})
        draft = ""  # the text streamed since the last reset
        async for item in drain(queue, keepalive_s=settings.sse_keepalive_s):
            name, data = item
            if item is KEEPALIVE:
                yield KEEPALIVE_COMMENT
            elif name == "token":
                draft += data["text"]
                yield chunk({"content": data["text"]})
            elif name in ("reset", "repetition"):
                draft = ""
                yield chunk({}, convrag_reset=True, convrag_reset_reason=name)
            elif name == "done":
                answer = data["answer"]
                if draft.strip() != answer.strip():
                    yield chunk({}, convrag_reset=True, convrag_reset_reason="final_answer")
                    yield chunk({"content": answer})
                yield chunk(
                    {},
                    "stop",
                    citations=data["citations"],
                    no_answer=data["no_answer"],
                    answer=answer,
                    conversation_id=conversation_id,
                )
            elif name == "error":
                yield f"data: {json.dumps({'error': data})}\n\n"
        if body.stream_options is not None and body.stream_options.include_usage:
            last = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": body.model,
                "choices": [],
                "usage": usage_of(counter).model_dump(),
            }
            yield f"data: {json.dumps(last)}\n\n"
        yield "data: [DONE]\n\n"

    return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


def _history_from_messages(body: ChatCompletionIn) -> tuple[list[HistoryTurn], str]:
    """(history, question): the last user message is the question; the history is the
    last 5 user/assistant pairs before it, the window a stored conversation gets by
    default (``Context.history_turns``)."""
    convo = [(m.role, _text(m.content)) for m in body.messages if m.role in ("user", "assistant")]
    if not convo or convo[-1][0] != "user":
        raise HTTPException(422, "messages: the last message must have role 'user'")
    question = convo.pop()[1].strip()
    turns: list[HistoryTurn] = []
    pending: str | None = None
    for role, text in convo[-10:]:
        if role == "user":
            pending = text
        elif pending is not None:
            turns.append(
                HistoryTurn(
                    turn_number=len(turns) + 1,
                    question=pending,
                    answer=text,
                    contextualized_query=None,
                    entities=extract_entities(text),
                    cited_document_ids=[],
                )
            )
            pending = None
    return turns[-5:], question
