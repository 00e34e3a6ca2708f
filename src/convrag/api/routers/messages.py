"""Message routes: ask a question in a conversation, read an answer's stored citations,
rate an answer.

The answer streams as typed server-sent events (see :mod:`convrag.api.turns`), or comes
whole as JSON for a client that accepts only ``application/json``. A stream that has had
no event for ``SSE_KEEPALIVE_S`` seconds (a slow LLM) gets a ``: keep-alive`` comment,
which SSE clients skip, so that proxies with an idle timeout do not cut it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response, status
from fastapi.responses import JSONResponse, StreamingResponse

from convrag.api.deps import (
    ConversationId,
    MessageId,
    RunnerDep,
    ServicesDep,
    SettingsDep,
    WorkspaceDep,
)
from convrag.api.errors import not_found
from convrag.api.metrics import FEEDBACK, HTTP_ERRORS
from convrag.api.schemas import CitationOut, FeedbackIn, FeedbackOut, MessageIn, error_responses
from convrag.api.turns import (
    KEEPALIVE,
    KEEPALIVE_COMMENT,
    SSE_HEADERS,
    ConversationBusy,
    Event,
    answer_out,
    drain,
    turn_context,
)
from convrag.state import InputState

router = APIRouter(tags=["conversations"])


def _sse(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, default=str)}\n\n"


def _wants_json(request: Request) -> bool:
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/event-stream" not in accept


@router.post(
    "/v1/conversations/{conversation_id}/messages",
    responses={
        200: {
            "content": {
                "text/event-stream": {},
                "application/json": {"schema": {"$ref": "#/components/schemas/AnswerOut"}},
            },
            "description": "SSE events (default) or, with `Accept: application/json`, "
            "the whole answer.",
        },
        404: {"description": "No such conversation in this workspace."},
        409: {"description": "The conversation is still answering a message."},
    },
)
async def post_message(
    conversation_id: ConversationId,
    body: MessageIn,
    request: Request,
    workspace: WorkspaceDep,
    runner: RunnerDep,
    settings: SettingsDep,
) -> Response:
    """Ask a question in a conversation; the answer streams as typed SSE events."""
    content = body.content.strip()
    if not content:
        raise HTTPException(422, "content: must not be blank")
    payload = InputState(message=content, conversation_id=conversation_id)
    try:
        queue, task = runner.start(
            conversation_id,
            payload,
            turn_context(
                workspace,
                body.rag,
                web_available=runner.assistant.services.web is not None,
                create_conversation=False,
            ),
        )
    except ConversationBusy:
        HTTP_ERRORS.labels("409").inc()
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            "the conversation is still answering the previous message; retry when it is "
            "done (messages are not queued)",
        ) from None
    if _wants_json(request):
        async for _ in drain(queue):
            pass
        answer = answer_out(conversation_id, await task)
        return JSONResponse(answer.model_dump(mode="json"))
    # The turn's first event tells whether the conversation is the caller's; an unknown
    # or foreign id is a 404 before any stream starts. That check is a quick database
    # read; should the first event take longer than a keep-alive period, the stream
    # starts with a keep-alive instead (and a foreign id then ends it with an `error`).
    keepalive = settings.sse_keepalive_s
    first: Event | None
    try:
        first = await asyncio.wait_for(queue.get(), keepalive)
    except TimeoutError:
        first = KEEPALIVE
    if first is not None and first[0] == "error" and first[1].get("code") == "not_found":
        await task
        raise not_found("conversation", conversation_id)

    async def events() -> AsyncIterator[str]:
        if first is None:
            return
        yield KEEPALIVE_COMMENT if first is KEEPALIVE else _sse(*first)
        async for item in drain(queue, keepalive_s=keepalive):
            yield KEEPALIVE_COMMENT if item is KEEPALIVE else _sse(*item)

    return StreamingResponse(events(), media_type="text/event-stream", headers=SSE_HEADERS)


@router.get(
    "/v1/messages/{message_id}/sources",
    response_model=list[CitationOut],
    responses=error_responses({404: "No such message (turn) in this workspace."}),
)
async def message_sources(
    message_id: MessageId, workspace: WorkspaceDep, services: ServicesDep
) -> list[CitationOut]:
    """The stored citations of an answer (a turn id from the `done` event)."""
    rows = await services.db.citations(workspace, message_id)
    if rows is None:
        raise not_found("message", message_id)
    return [CitationOut.model_validate(r) for r in rows]


@router.post(
    "/v1/messages/{message_id}/feedback",
    response_model=FeedbackOut,
    responses=error_responses(
        {
            404: "No such message (turn) in this workspace.",
            422: "`rating` is not `up` or `down`, or `comment` is over 2,000 characters.",
        }
    ),
)
async def rate_message(
    message_id: MessageId, body: FeedbackIn, workspace: WorkspaceDep, services: ServicesDep
) -> FeedbackOut:
    """Rate an answer (a turn id from the `done` event) up or down, with an optional
    comment. A turn keeps one rating: a new one replaces the old. Ratings are shown with
    the turns of `GET /v1/conversations/{id}` and counted in `convrag_feedback_total`."""
    stored = await services.db.save_feedback(workspace, message_id, body.rating, body.comment)
    if stored is None:
        raise not_found("message", message_id)
    FEEDBACK.labels(stored.rating).inc()
    return FeedbackOut.model_validate(stored)
