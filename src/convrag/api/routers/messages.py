"""Message routes: ask a question in a conversation, read an answer's stored citations,
rate an answer.

A message may carry an ``Idempotency-Key`` header or a ``client_message_id`` (the same
thing; at most 200 characters). Its turn id is derived from the key, so a retry is the
same turn: an answered one is answered again from the store without running the graph
(JSON: the same reply; SSE: one ``done`` event), one still running in this process is
waited for and then answered the same way, one running in another worker gets 409, and a
failed one runs again.

The answer streams as typed server-sent events (see :mod:`convrag.api.turns`), or comes
whole as JSON for a client that accepts only ``application/json``. A stream gets a
``: keep-alive`` comment every ``SSE_KEEPALIVE_S`` seconds, which SSE clients skip, so
that proxies with an idle timeout do not cut it while the LLM is slow.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, HTTPException, Request, Response, status
from fastapi.responses import JSONResponse
from sse_starlette import ServerSentEvent

from convrag.api.deps import (
    MessageId,
    OwnedConversation,
    RunnerDep,
    ServicesDep,
    SettingsDep,
    WorkspaceDep,
)
from convrag.api.errors import not_found
from convrag.api.metrics import FEEDBACK
from convrag.api.schemas import (
    MAX_IDEMPOTENCY_KEY_CHARS,
    NO_CONTROL_CHARACTERS,
    AnswerOut,
    CitationOut,
    FeedbackIn,
    FeedbackOut,
    MessageIn,
    StopOut,
    error_responses,
    has_control_characters,
    keyed_route_responses,
)
from convrag.api.turn_replies import TurnResult, answer_out, done_event, stored_answer
from convrag.api.turn_stream import (
    KEEPALIVE,
    Event,
    KeepAliveEvent,
    drain,
    event_stream,
    keep_alive,
    sse,
)
from convrag.api.turns import TurnRunner, turn_context, turn_id_for
from convrag.errors import BUSY, ConversationBusyHere
from convrag.services import Services
from convrag.state import InputState, TurnRequest
from convrag.stores.base import INTERRUPTED_AFTER
from convrag.stores.turns import INTERRUPTED_TURN

router = APIRouter(tags=["conversations"], responses=keyed_route_responses())


_REPLY_TYPES = ("text/event-stream", "application/json")


def _accepted(accept: str, media: str) -> float:
    """The quality an ``Accept`` header gives ``media``: that of its most specific
    matching range (``text/event-stream`` over ``text/*`` over ``*/*``), 0 when none.
    A ``q`` that is no number from 0 to 1 (``q=abc``, ``q=nan``, ``q=inf``) counts as 0."""
    best = (-1, 0.0)
    kind = media.split("/")[0]
    for part in accept.split(","):
        name, *params = (p.strip().lower() for p in part.split(";"))
        rank = {media: 2, f"{kind}/*": 1, "*/*": 0}.get(name)
        if rank is None or rank < best[0]:
            continue
        q = 1.0
        for param in params:
            if param.startswith("q="):
                try:
                    q = float(param[2:])
                except ValueError:
                    q = 0.0
                q = min(max(q, 0.0), 1.0) if math.isfinite(q) else 0.0
        best = (rank, q) if rank > best[0] else (rank, max(q, best[1]))
    return best[1]


def _wants_json(request: Request) -> bool:
    """Whether the reply is one JSON object rather than SSE events: when ``Accept``
    prefers ``application/json`` (SSE wins a tie, and a missing header); 406 when it
    accepts neither."""
    accept = request.headers.get("accept", "").strip()
    if not accept:
        return False
    sse, json_q = (_accepted(accept, media) for media in _REPLY_TYPES)
    if sse <= 0.0 and json_q <= 0.0:
        raise HTTPException(
            status.HTTP_406_NOT_ACCEPTABLE,
            f"Accept: {accept[:100]!r} accepts neither reply; ask for text/event-stream "
            "(the default) or application/json",
        )
    return json_q > sse


def _idempotency_key(request: Request, body: MessageIn) -> str | None:
    """The message's idempotency key, from the ``Idempotency-Key`` header or the body's
    ``client_message_id``; 422 naming it when it is blank, too long, holds a control
    character (the body's is refused by :class:`MessageIn` alike), or the two differ,
    and naming ``Last-Event-ID`` when a client reconnects with it but without a key."""
    header = request.headers.get("idempotency-key")
    if header is not None:
        if not header.strip():
            raise HTTPException(422, "Idempotency-Key: must not be blank")
        if len(header) > MAX_IDEMPOTENCY_KEY_CHARS:
            raise HTTPException(
                422, f"Idempotency-Key: at most {MAX_IDEMPOTENCY_KEY_CHARS} characters"
            )
        if has_control_characters(header):
            raise HTTPException(422, f"Idempotency-Key: {NO_CONTROL_CHARACTERS}")
    key = body.client_message_id
    if key is not None and not key.strip():
        raise HTTPException(422, "client_message_id: must not be blank")
    if header is not None and key is not None and header != key:
        raise HTTPException(
            422, "Idempotency-Key and client_message_id differ; send one, or the same in both"
        )
    key = header if header is not None else key
    if key is None and request.headers.get("last-event-id", "").strip():
        # An SSE client reconnecting: the events carry no ids, so there is no stream to
        # resume, and without a key the message would be asked again as a new turn.
        raise HTTPException(
            422,
            "Last-Event-ID: an answer's stream cannot be resumed (its events carry no "
            "ids); send the message again with its Idempotency-Key to get its answer, "
            "or without Last-Event-ID to ask it again",
        )
    return key


def _busy(detail: str = BUSY) -> HTTPException:
    return HTTPException(status.HTTP_409_CONFLICT, detail)


async def _previous_attempt(
    services: Services,
    runner: TurnRunner,
    workspace: str,
    conversation_id: str,
    turn_id: str,
    content: str,
) -> asyncio.Task[TurnResult] | AnswerOut | None:
    """What became of an earlier attempt at the keyed turn ``turn_id``: its task when it
    still runs in this process, its stored reply when it was answered, None when it must
    run (new, failed, or left ``processing`` by a process that is gone, or for longer
    than :data:`INTERRUPTED_AFTER`: it is marked failed first); 409 while it is being
    answered elsewhere, 422 when the key was used for another message (``content``)."""
    turn = await services.db.turns.get_turn(workspace, conversation_id, turn_id)
    if turn is not None and turn.question != content:
        raise HTTPException(
            422,
            "Idempotency-Key: already used in this conversation for a different message; "
            "send a new key with a new message",
        )
    task = runner.running(workspace, conversation_id, turn_id)
    if task is not None:
        return task
    if turn is None or turn.status == "failed":
        return None
    if turn.status == "done":
        citations = await services.db.transcripts.citations(workspace, turn_id) or []
        return stored_answer(conversation_id, turn, citations)
    if await services.db.turns.turn_orphaned(turn_id, INTERRUPTED_AFTER):
        await services.db.turns.fail_turn(workspace, turn_id, INTERRUPTED_TURN)
        return None
    raise HTTPException(
        status.HTTP_409_CONFLICT,
        "this message (its idempotency key) is still being answered by another worker; "
        "retry when it is done",
    )


async def _reply(request: Request, answer: AnswerOut) -> Response:
    """A keyed message's reply from an earlier attempt's answer: the JSON reply, or a
    stream of a single ``done`` event."""
    if _wants_json(request):
        return JSONResponse(answer.model_dump(mode="json"))

    async def events() -> AsyncIterator[ServerSentEvent]:
        yield sse(done_event(answer))

    return event_stream(events())


async def _joined(
    request: Request, conversation_id: str, task: asyncio.Task[TurnResult]
) -> Response:
    """Wait for the running attempt of the same keyed turn, then answer as it did. The
    wait is shielded: a client that goes away does not cancel the other request's turn."""
    result = await asyncio.shield(task)
    return await _reply(request, answer_out(conversation_id, result))


#: What ``POST .../messages`` answers, beyond the route's common errors.
_MESSAGE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {
            "text/event-stream": {},
            "application/json": {"schema": {"$ref": "#/components/schemas/AnswerOut"}},
        },
        "description": "SSE events (default) or, with `Accept: application/json`, "
        "the whole answer.",
    },
    404: {"description": "No such conversation in this workspace."},
    406: {"description": "`Accept` names neither text/event-stream nor application/json."},
    409: {
        "description": "The conversation is still answering a message or is being "
        "deleted, or this message's idempotency key is being answered by another "
        "worker, or (the JSON reply) the answer was stopped "
        "(`POST /v1/conversations/{id}/stop`)."
    },
    422: {
        "description": "`content` blank or too long, or `Idempotency-Key` / "
        "`client_message_id` blank, over 200 characters, with control characters, "
        "differing, or already used for a different message; or `Last-Event-ID` "
        "sent without an idempotency key."
    },
}


@router.post("/v1/conversations/{conversation_id}/messages", responses=_MESSAGE_RESPONSES)
async def post_message(
    conversation_id: OwnedConversation,
    body: MessageIn,
    request: Request,
    workspace: WorkspaceDep,
    runner: RunnerDep,
    settings: SettingsDep,
    services: ServicesDep,
) -> Response:
    """Ask a question in a conversation; the answer streams as typed SSE events.

    With an ``Idempotency-Key`` header (or ``client_message_id``), a retry of the same
    message answers the same turn and never asks twice."""
    content = body.content.strip()
    if not content:
        raise HTTPException(422, "content: must not be blank")
    _wants_json(request)  # 406 now, before any work, for an Accept it cannot meet
    key = _idempotency_key(request, body)
    payload = InputState(message=content, conversation_id=conversation_id)
    turn_id: str | None = None
    if key is not None:
        turn_id = turn_id_for(workspace, conversation_id, key)
        previous = await _previous_attempt(
            services, runner, workspace, conversation_id, turn_id, content
        )
        if isinstance(previous, AnswerOut):
            return await _reply(request, previous)
        if previous is not None:
            return await _joined(request, conversation_id, previous)
        payload["turn_request"] = TurnRequest(turn_id=turn_id, idempotency_key=key)
    try:
        queue, task = await runner.start(
            conversation_id,
            payload,
            turn_context(workspace, body.rag, runner.assistant.services, create_conversation=False),
        )
    except ConversationBusyHere as busy:
        joined = runner.running(workspace, conversation_id, turn_id) if turn_id else None
        if joined is not None:  # the same keyed message, sent twice at once
            return await _joined(request, conversation_id, joined)
        raise _busy(str(busy)) from None
    if _wants_json(request):
        async for _ in drain(queue):
            pass
        answer = answer_out(conversation_id, await task)
        return JSONResponse(answer.model_dump(mode="json"))
    keepalive = settings.sse_keepalive_s
    first = await _first_event(conversation_id, queue, task, keepalive)
    return event_stream(_events(first, queue), keepalive_s=keepalive)


async def _first_event(
    conversation_id: str,
    queue: asyncio.Queue[Event | None],
    task: asyncio.Task[TurnResult],
    keepalive: float,
) -> Event | KeepAliveEvent | None:
    """The turn's first event, or :data:`KEEPALIVE` when it takes longer than a
    keep-alive period; 404 or 409 when that event says the turn cannot run.

    The conversation was the caller's when the request came in (OwnedConversation);
    the turn checks again as it stores the question, and its first event says so if
    the conversation was deleted meanwhile: a 404 before any stream starts. That check
    is a quick database read; should the first event take longer than a keep-alive
    period, the stream starts with a keep-alive instead (and an `error` then ends it)."""
    first: Event | KeepAliveEvent | None
    try:
        first = await asyncio.wait_for(queue.get(), keepalive)
    except TimeoutError:
        first = KEEPALIVE
    if first is not None and first["event"] == "error" and first["code"] == "not_found":
        await task
        raise not_found("conversation", conversation_id)
    if first is not None and first["event"] == "error" and first["code"] == "conflict":
        await task  # another worker took the keyed turn up between the check and the start
        raise HTTPException(status.HTTP_409_CONFLICT, first["message"])
    return first


async def _events(
    first: Event | KeepAliveEvent | None, queue: asyncio.Queue[Event | None]
) -> AsyncIterator[ServerSentEvent]:
    """The answer's SSE stream: ``first`` (:func:`_first_event`; None ends it at once,
    a late one is a keep-alive comment), then the turn's events."""
    if first is None:
        return
    yield keep_alive() if first["event"] == "keep-alive" else sse(first)
    async for item in drain(queue):
        yield sse(item)


@router.post(
    "/v1/conversations/{conversation_id}/stop",
    response_model=StopOut,
    responses=error_responses({404: "No such conversation in this workspace."}),
)
async def stop_answer(
    conversation_id: OwnedConversation, workspace: WorkspaceDep, runner: RunnerDep
) -> StopOut:
    """Stop the answer the conversation is writing (a "Stop" button): its turn is stored
    ``failed`` with the reason "interrupted: the run was stopped before its answer", its
    stream ends with an ``error`` event of code ``stopped``, and the conversation takes
    the next message at once.

    A client that merely disconnects does not stop its answer (it is finished and stored).
    With several workers, the one answering it is asked to stop it, and the reply waits
    until it has (503 if it has not within 10 s). ``stopped`` is false when nothing was
    being answered."""
    turn_id = await runner.stop(workspace, conversation_id)
    return StopOut(conversation_id=conversation_id, stopped=turn_id is not None, turn_id=turn_id)


@router.get(
    "/v1/messages/{message_id}/sources",
    response_model=list[CitationOut],
    responses=error_responses({404: "No such message (turn) in this workspace."}),
)
async def message_sources(
    message_id: MessageId, workspace: WorkspaceDep, services: ServicesDep
) -> list[CitationOut]:
    """The stored citations of an answer (a turn id from the `done` event)."""
    rows = await services.db.transcripts.citations(workspace, message_id)
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
    stored = await services.db.feedback.save_feedback(
        workspace, message_id, body.rating, body.comment
    )
    if stored is None:
        raise not_found("message", message_id)
    FEEDBACK.labels(stored.rating).inc()
    return FeedbackOut.model_validate(stored)
