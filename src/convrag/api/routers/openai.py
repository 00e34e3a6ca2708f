"""``POST /v1/chat/completions``: OpenAI's chat completions API over the same turns.

The routes (and ``/v1/models``) answer without ``/v1`` too, for a client whose
``base_url`` is the server's address alone. Every error they answer is in OpenAI's shape,
``{"error": {message, type, param, code}}`` beside the usual ``detail``, which is what
OpenAI clients show, and a refused body is a 400, as OpenAI answers it
(:class:`OpenAIRoute`). Parameters that only tune an LLM's sampling or length are
accepted and ignored; those whose request cannot be honoured (several choices, a tool
call, JSON or audio output) are a 400 naming them (:func:`_refuse_unsupported`).

One conversation per chat: an OpenAI client sends the whole history with each request,
and a request whose earlier messages (its user and assistant messages before the last
user message, system messages aside, whitespace aside) are a chat whose last answer was
stored continues that chat's conversation (:class:`Transcript`: the hash of the chat so
far, one indexed lookup; each answer's is kept, so a chat resent from an earlier point,
as a regenerated answer is, continues it too). A client may name the conversation
instead, with ``metadata: {"conversation_id": ...}`` in the body or an
``X-Conversation-Id`` header; an id that is no conversation of the workspace is a 404
naming it. Any other request starts
a new conversation, except one whose question is only a greeting, a thanks or a goodbye
(chit-chat, which needs no retrieval): it gets its fixed reply and is stored nowhere
(``conversation_id`` null). The turn reads the conversation's stored turns when they are
the history the request sends (their cited documents guide a follow-up's search), else
the request's ``messages``. Two requests continuing one conversation at once: the second
is a 409, as for any conversation answering a message.

Replies carry the usual fields plus ``citations``, ``sources`` and ``conversation_id``
(also the ``X-Conversation-Id`` response header); streamed chunks follow OpenAI's format,
ending with ``data: [DONE]``, and the final one carries ``citations``, ``no_answer``,
``confidence``, ``answer`` and ``conversation_id`` (no ``sources``).

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
non-streaming reply is the stored answer alone. Every ``SSE_KEEPALIVE_S`` seconds the
stream sends a ``: keep-alive`` SSE comment, which OpenAI clients skip.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.tracers.context import register_configure_hook
from sse_starlette import EventSourceResponse, ServerSentEvent

from convrag.answering.replies import chit_chat_answer
from convrag.api.deps import RunnerDep, ServicesDep, SettingsDep, WorkspaceDep
from convrag.api.errors import openai_error_body, shown
from convrag.api.openai_chats import (
    CONVERSATION_HEADER,
    InvalidRequest,
    Transcript,
    continued,
    history_from_messages,
    history_sent,
    named_conversation,
    remember_chat,
)
from convrag.api.schemas import (
    MODEL_ID,
    AnswerOut,
    ChatCompletionIn,
    RagOptions,
    UsageOut,
    openai_route_responses,
)
from convrag.api.turn_replies import TurnResult, answer_out, done_data, done_event
from convrag.api.turn_stream import DoneEvent, Event, drain, event_stream, sse_data
from convrag.api.turns import TurnRunner, turn_context
from convrag.config import Settings
from convrag.context import Context
from convrag.errors import ConversationBusyHere
from convrag.events import TokenEvent
from convrag.records import HistoryTurn
from convrag.rewriting.classify import is_chit_chat
from convrag.state import InputState
from convrag.text.tokens import clean

log = logging.getLogger(__name__)


def openai_error(
    status_code: int,
    message: str,
    *,
    param: str | None = None,
    code: str | None = None,
) -> JSONResponse:
    """An error answer in OpenAI's shape (:func:`~convrag.api.errors.openai_error_body`)."""
    return JSONResponse(
        openai_error_body(status_code, message, param=param, code=code), status_code
    )


class OpenAIRoute(APIRoute):
    """A route whose every error is answered in OpenAI's shape, ``{"error": {message,
    type, param, code}}``: OpenAI clients show that ``message`` and nothing of any other
    body ("Error code: 401" alone). The answer is the one the app gives any route (the
    same handlers: the key's 401 and 429, a store's 503, the body's 415), reshaped, and
    a refused body is a 400, as OpenAI answers it, not a 422."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def in_openai_shape(request: Request) -> Response:
            try:
                return await handler(request)
            except InvalidRequest as exc:
                return openai_error(exc.status_code, exc.message, param=exc.param, code=exc.code)
            except Exception as exc:
                reply = await _app_reply(request, exc)
                if reply is None:
                    raise
                return reshaped(reply)

        return in_openai_shape


async def _app_reply(request: Request, exc: Exception) -> Response | None:
    """What the app's exception handler for ``exc`` answers; None where it has none."""
    handlers: dict[Any, Callable[..., Any]] = request.app.exception_handlers
    for cls in type(exc).__mro__:
        if cls in handlers:
            reply = handlers[cls](request, exc)
            if inspect.isawaitable(reply):
                reply = await reply
            return reply if isinstance(reply, Response) else None
    return None


def reshaped(reply: Response) -> Response:
    """``reply`` (a ``{"detail", "errors"?}`` body) in OpenAI's error shape; a 422 is a 400."""
    try:
        data = json.loads(bytes(reply.body))
    except ValueError:
        return reply
    if not isinstance(data, dict) or not isinstance(data.get("detail"), str):
        return reply
    status_code = 400 if reply.status_code == 422 else reply.status_code
    errors = data.get("errors") if isinstance(data.get("errors"), list) else None
    param = code = None
    if errors:
        param = _param(str(errors[0].get("field", ""))) or None
        code = _code_of(str(errors[0].get("type", "")))
    body = openai_error_body(status_code, data["detail"], param=param, code=code, errors=errors)
    headers = {
        k: v for k, v in reply.headers.items() if k not in ("content-length", "content-type")
    }
    return JSONResponse(body, status_code, headers=headers)


def _param(field: str) -> str:
    """A field as OpenAI names it: ``messages.0.content`` is ``messages[0].content``."""
    out = ""
    for part in field.split(".") if field else []:
        if part.isdigit():
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out


def _code_of(problem: str) -> str:
    """OpenAI's ``code`` for a refused field, by the problem's type."""
    if problem == "missing":
        return "missing_required_parameter"
    return "invalid_type" if problem.endswith("_type") else "invalid_value"


router = APIRouter(tags=["openai"], route_class=OpenAIRoute)

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


_MODEL = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "convrag"}


@router.get("/v1/models", responses=openai_route_responses())
@router.get("/models", include_in_schema=False)
async def list_models(workspace: WorkspaceDep) -> dict[str, Any]:
    """The models list OpenAI-compatible chat clients ask for first."""
    return {"object": "list", "data": [_MODEL]}


@router.get(
    "/v1/models/{model}",
    responses=openai_route_responses({404: "Any model but `convrag` (`code: model_not_found`)."}),
)
@router.get("/models/{model}", include_in_schema=False)
async def retrieve_model(model: str, workspace: WorkspaceDep) -> Response:
    """The one model, as OpenAI clients' ``models.retrieve("convrag")`` asks for it."""
    if model != MODEL_ID:
        return openai_error(
            404,
            f"model {shown(model)} not found: this server has one model, '{MODEL_ID}' "
            "(chat completions answer with it whatever `model` names)",
            param="model",
            code="model_not_found",
        )
    return JSONResponse(_MODEL)


_CHAT_ERRORS: dict[int | str, str] = {
    400: "A body OpenAI's API would refuse too (`messages` empty or not ending with a user "
    "message of 1 to 8,000 characters, a field of the wrong type), or one asking for what "
    "this endpoint cannot give: `n` over 1, a tool call (`tool_choice: required` or a named "
    "tool), JSON output (`response_format` `json_object` or `json_schema`), audio; or a "
    "conversation named in two ways, or by an id that is not a UUID; `param` names the "
    "field.",
    404: "The conversation named (`metadata.conversation_id` or `X-Conversation-Id`) is "
    "not one of the workspace's (`code: conversation_not_found`).",
    409: "The conversation continued is still answering an earlier message.",
    413: "The body is over `MAX_BODY_BYTES`.",
    415: "The body is not sent as `application/json`.",
}


#: The request header that names the conversation a request continues.
@router.post(
    "/v1/chat/completions",
    responses={
        200: {
            "content": {"application/json": {}, "text/event-stream": {}},
            "description": "A `chat.completion` object, or with `stream: true` its "
            "`chat.completion.chunk`s as server-sent events ending with `data: [DONE]`.",
        },
        **openai_route_responses(_CHAT_ERRORS),
    },
)
@router.post("/chat/completions", include_in_schema=False)
async def chat_completions(
    body: ChatCompletionIn,
    workspace: WorkspaceDep,
    services: ServicesDep,
    runner: RunnerDep,
    settings: SettingsDep,
    x_conversation_id: Annotated[
        str | None,
        Header(
            description="The conversation this message continues (as "
            "`metadata.conversation_id` does); without it, the conversation whose chat "
            "is the request's earlier messages, else a new one."
        ),
    ] = None,
) -> Response:
    """OpenAI's chat completions shape, one conversation per chat (see the module's
    docstring): the conversation named, or the one whose chat the request's earlier
    messages are, or a new one; a greeting that starts a chat is answered unstored.

    Streamed, a dropped draft is announced with a ``"convrag_reset": true`` chunk and the
    text after the last one is the stored answer (see the module's docstring); the
    non-streaming reply is the stored answer.
    """
    _refuse_unsupported(body)
    turns, question = history_from_messages(body)
    transcript = Transcript.of(body)
    named = named_conversation(body, x_conversation_id)
    conversation_id = await continued(services.db, workspace, named, transcript)
    rag = body.workspace_rag or RagOptions()
    context = turn_context(
        workspace, rag, runner.assistant.services, create_conversation=conversation_id is None
    )
    history: list[HistoryTurn] | None = turns
    if conversation_id is None:
        if is_chit_chat(clean(question)):
            return _unstored_reply(body, chit_chat_answer(question), settings)
        conversation_id = await services.db.conversations.create_conversation(workspace)
    else:
        history = await history_sent(services, context, conversation_id, turns)
    payload = InputState(
        message=question, conversation_id=conversation_id, history_override=history
    )
    counter = UsageMetadataCallbackHandler()
    queue, task = await _start_counted(runner, conversation_id, payload, context, counter)

    async def remember(answer: str) -> None:
        await remember_chat(services, workspace, conversation_id, transcript.with_answer(answer))

    completion = _Completion(
        conversation_id=conversation_id,
        model=body.model or MODEL_ID,
        counter=counter,
        remember=remember,
    )
    headers = {CONVERSATION_HEADER: conversation_id}
    if not body.stream:
        return await _whole_reply(completion, conversation_id, queue, task, headers)
    return _streamed(body, completion, queue, settings, headers)


async def _whole_reply(
    completion: _Completion,
    conversation_id: str,
    queue: asyncio.Queue[Event | None],
    task: asyncio.Task[TurnResult],
    headers: dict[str, str],
) -> Response:
    """The non-streaming reply: the stored answer once the turn has run, its chat
    remembered first (the client's next request must find it)."""
    async for _ in drain(queue):
        pass
    answer = answer_out(conversation_id, await task)
    if completion.remember is not None:
        await completion.remember(answer.answer)
    return JSONResponse(completion.reply(answer), headers=headers)


def _streamed(
    body: ChatCompletionIn,
    completion: _Completion,
    queue: asyncio.Queue[Event | None],
    settings: Settings,
    headers: dict[str, str] | None = None,
) -> EventSourceResponse:
    """The streamed reply of ``completion``, whose turn writes its events to ``queue``."""
    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    chunks = completion.stream(queue, include_usage=include_usage)
    return event_stream(chunks, keepalive_s=settings.sse_keepalive_s, headers=headers)


def _unstored_reply(body: ChatCompletionIn, text: str, settings: Settings) -> Response:
    """The reply ``text`` (a fixed one: chit-chat's) of a turn that is stored nowhere,
    in the same shapes as a stored turn's, with ``conversation_id`` null."""
    completion = _Completion(
        conversation_id=None, model=body.model or MODEL_ID, counter=UsageMetadataCallbackHandler()
    )
    done = done_data(
        turn_id=None,
        answer=text,
        citations=[],
        timings_ms={},
        repetition_detected=False,
        no_answer=False,
        confidence="high",
        flags={},
    )
    if not body.stream:
        return JSONResponse(completion.reply_of(done, sources=[]))
    queue: asyncio.Queue[Event | None] = asyncio.Queue()
    for event in (TokenEvent(event="token", text=text, node="synthesize"), done, None):
        queue.put_nowait(event)
    return _streamed(body, completion, queue, settings)


async def _start_counted(
    runner: TurnRunner,
    conversation_id: str,
    payload: InputState,
    context: Context,
    counter: UsageMetadataCallbackHandler,
) -> tuple[asyncio.Queue[Event | None], asyncio.Task[TurnResult]]:
    """Start the turn with ``counter`` counting its LLM calls' usage: the turn's task is
    created here, in a context that holds the counter (:data:`_TURN_USAGE`). A 409 when
    this process is answering another message of the conversation."""
    token = _TURN_USAGE.set(counter)
    try:
        return await runner.start(conversation_id, payload, context)
    except ConversationBusyHere as busy:  # answering an earlier message, or being deleted
        raise InvalidRequest(str(busy), code="conversation_busy", status_code=409) from None
    finally:
        _TURN_USAGE.reset(token)


#: The ``code`` of an ``error`` event that is the request's fault, not the service's.
_REFUSED = ("invalid_request", "not_found", "conflict")


@dataclass
class _Completion:
    """One chat completion's reply: the JSON object, or its stream of chunks. Each
    object of it repeats its ``id``, ``created`` and ``model``."""

    conversation_id: str | None
    """None for a reply stored nowhere (:func:`_unstored_reply`)."""
    model: str
    counter: UsageMetadataCallbackHandler
    """The turn's LLM usage (:func:`usage_of`)."""
    remember: Callable[[str], Awaitable[None]] | None = None
    """Called with the stored answer before the stream's last chunks go out: the chat
    answered is remembered (:func:`remember_chat`) before the client can send its next
    message."""
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))
    draft: str = ""
    """The text streamed since the last reset (the turn dropped its draft)."""

    def _head(self, kind: str) -> dict[str, Any]:
        """The fields every object of this completion starts with."""
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}

    def reply(self, answer: AnswerOut) -> dict[str, Any]:
        """The ``chat.completion`` object answering with ``answer``."""
        return self.reply_of(done_event(answer), sources=answer.sources)

    def reply_of(self, done: DoneEvent, *, sources: Sequence[object]) -> dict[str, Any]:
        """The ``chat.completion`` object of a turn whose ``done`` event's data is
        ``done``, with its ``sources``."""
        return {
            **self._head("chat.completion"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": done["answer"]},
                }
            ],
            "usage": usage_of(self.counter).model_dump(),
            "citations": [c.model_dump() for c in done["citations"]],
            "no_answer": done["no_answer"],
            "confidence": done["confidence"],
            "sources": sources,
            "conversation_id": self.conversation_id,
        }

    def chunk(
        self, delta: dict[str, Any], finish: str | None = None, **extra: Any
    ) -> ServerSentEvent:
        """A ``chat.completion.chunk`` with ``delta`` (and ``extra`` fields), as SSE."""
        data = {
            **self._head("chat.completion.chunk"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return sse_data(json.dumps(data, default=str))

    async def stream(
        self, queue: asyncio.Queue[Event | None], *, include_usage: bool
    ) -> AsyncIterator[ServerSentEvent]:
        """The SSE chunks of the turn's events on ``queue``, ending with ``[DONE]``;
        with ``include_usage``, a last chunk with no choices carries ``usage`` before
        it."""
        yield self.chunk({"role": "assistant", "content": ""})
        async for item in drain(queue):
            if item["event"] == "done" and self.remember is not None:
                await self.remember(item["answer"])
            for out in self._chunks(item):
                yield out
        if include_usage:
            last = {
                **self._head("chat.completion.chunk"),
                "choices": [],
                "usage": usage_of(self.counter).model_dump(),
            }
            yield sse_data(json.dumps(last))
        yield sse_data("[DONE]")

    def _chunks(self, event: Event) -> list[ServerSentEvent]:
        """The chunks of one of the turn's events (none for those OpenAI has no shape
        for: ``sources``, ``citation``, ``rewrite``)."""
        if event["event"] == "token":
            self.draft += event["text"]
            return [self.chunk({"content": event["text"]})]
        if event["event"] in ("reset", "repetition"):
            self.draft = ""
            return [self.chunk({}, convrag_reset=True, convrag_reset_reason=event["event"])]
        if event["event"] == "done":
            return self._done(event)
        if event["event"] == "error":  # OpenAI clients raise it, with its message
            kind = "invalid_request_error" if event["code"] in _REFUSED else "server_error"
            error = {
                "type": kind,
                "param": None,
                "code": event["code"],
                "message": event["message"],
            }
            return [sse_data(json.dumps({"error": error}))]
        return []

    def _done(self, event: DoneEvent) -> list[ServerSentEvent]:
        """The last chunks of an answered turn (``event``: its ``done`` event): the
        stored answer again after a ``convrag_reset`` when the draft streamed is not it,
        then the final chunk."""
        answer = event["answer"]
        chunks = []
        if self.draft.strip() != answer.strip():
            chunks.append(self.chunk({}, convrag_reset=True, convrag_reset_reason="final_answer"))
            chunks.append(self.chunk({"content": answer}))
        final = self.chunk(
            {},
            "stop",
            citations=[c.model_dump() for c in event["citations"]],
            no_answer=event["no_answer"],
            confidence=event["confidence"],
            answer=answer,
            conversation_id=self.conversation_id,
        )
        return [*chunks, final]


def _refuse_unsupported(body: ChatCompletionIn) -> None:
    """A 400 for a parameter whose request this endpoint cannot honour, where ignoring
    it would hand the client something other than what it asked for (several choices, a
    tool call, JSON, audio). The others (``temperature``, ``max_tokens``, ``stop``,
    ``tools`` the model may leave uncalled, ...) are accepted and ignored."""
    if body.n is not None and body.n > 1:
        raise InvalidRequest(
            f"n: {body.n} choices were asked for; this endpoint answers one per request "
            "(omit n or send 1)",
            param="n",
            code="unsupported_value",
        )
    for name, choice in (("tool_choice", body.tool_choice), ("function_call", body.function_call)):
        if choice is not None and choice not in ("auto", "none"):
            raise InvalidRequest(
                f"{name}: this endpoint never calls tools or functions, so it cannot be "
                f"made to ({json.dumps(choice)[:80]}); send 'auto', 'none' or leave it out",
                param=name,
                code="unsupported_value",
            )
    kind = (body.response_format or {}).get("type") or "text"
    if kind != "text":
        raise InvalidRequest(
            f"response_format: the answer is prose with [n] citations, not "
            f"{json.dumps(kind)[:40]}; send {{'type': 'text'}} or leave it out",
            param="response_format",
            code="unsupported_value",
        )
    if body.audio is not None or any(m != "text" for m in body.modalities or []):
        param = "audio" if body.audio is not None else "modalities"
        raise InvalidRequest(
            f"{param}: the answer is text only; send no audio and modalities ['text'] or none",
            param=param,
            code="unsupported_value",
        )
