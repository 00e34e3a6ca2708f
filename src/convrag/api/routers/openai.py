"""``POST /v1/chat/completions``: OpenAI's chat completions API over the same turns.

The routes (and ``/v1/models``) answer without ``/v1`` too, for a client whose
``base_url`` is the server's address alone. Every error they answer is in OpenAI's shape,
``{"error": {message, type, param, code}}`` beside the usual ``detail``, which is what
OpenAI clients show, and a refused body is a 400, as OpenAI answers it
(:class:`OpenAIRoute`). Parameters that only tune an LLM's sampling or length are
accepted and ignored; those whose request cannot be honoured (several choices, a tool
call, JSON or audio output) are a 400 naming them (:func:`_refuse_unsupported`).

An OpenAI client sends the whole history with each request, so each request is a new
conversation whose history comes from its ``messages``, not from stored turns. Replies
carry the usual fields plus ``citations``, ``sources`` and ``conversation_id``; streamed
chunks follow OpenAI's format, ending with ``data: [DONE]``, and the final one carries
``citations``, ``no_answer``, ``confidence``, ``answer`` and ``conversation_id`` (no
``sources``).

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

import asyncio
import inspect
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute
from langchain_core.callbacks import UsageMetadataCallbackHandler
from langchain_core.tracers.context import register_configure_hook

from convrag.api.deps import RunnerDep, ServicesDep, SettingsDep, WorkspaceDep
from convrag.api.errors import openai_error_body, shown
from convrag.api.schemas import (
    MAX_MESSAGE_CHARS,
    MODEL_ID,
    AnswerOut,
    ChatCompletionIn,
    RagOptions,
    UsageOut,
    openai_route_responses,
)
from convrag.api.turns import (
    KEEPALIVE_COMMENT,
    SSE_HEADERS,
    DoneEvent,
    Event,
    TurnResult,
    TurnRunner,
    answer_out,
    drain,
    turn_context,
)
from convrag.context import Context
from convrag.records import HistoryTurn
from convrag.state import InputState
from convrag.text.entities import extract_entities


class InvalidRequest(Exception):
    """A request OpenAI's API would refuse: a 400 ``invalid_request_error`` naming the
    field at fault (``param``) and why (``code``)."""

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code


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
                return openai_error(400, exc.message, param=exc.param, code=exc.code)
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
    "tool), JSON output (`response_format` `json_object` or `json_schema`), audio; `param` "
    "names the field.",
    413: "The body is over `MAX_BODY_BYTES`.",
    415: "The body is not sent as `application/json`.",
}


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
) -> Response:
    """OpenAI's chat completions shape; the history comes from the request's messages.

    Streamed, a dropped draft is announced with a ``"convrag_reset": true`` chunk and the
    text after the last one is the stored answer (see the module's docstring); the
    non-streaming reply is the stored answer.
    """
    _refuse_unsupported(body)
    turns, question = _history_from_messages(body)
    model = body.model or MODEL_ID
    conversation_id = await services.db.create_conversation(workspace)
    payload = InputState(message=question, conversation_id=conversation_id, history_override=turns)
    rag = body.workspace_rag or RagOptions()
    context = turn_context(workspace, rag, runner.assistant.services)
    counter = UsageMetadataCallbackHandler()
    queue, task = await _start_counted(runner, conversation_id, payload, context, counter)
    completion = _Completion(conversation_id=conversation_id, model=model, counter=counter)
    if not body.stream:
        async for _ in drain(queue):
            pass
        return JSONResponse(completion.reply(answer_out(conversation_id, await task)))
    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    chunks = completion.stream(queue, settings.sse_keepalive_s, include_usage=include_usage)
    return StreamingResponse(chunks, media_type="text/event-stream", headers=SSE_HEADERS)


async def _start_counted(
    runner: TurnRunner,
    conversation_id: str,
    payload: InputState,
    context: Context,
    counter: UsageMetadataCallbackHandler,
) -> tuple[asyncio.Queue[Event | None], asyncio.Task[TurnResult]]:
    """Start the turn with ``counter`` counting its LLM calls' usage: the turn's task is
    created here, in a context that holds the counter (:data:`_TURN_USAGE`)."""
    token = _TURN_USAGE.set(counter)
    try:
        return await runner.start(conversation_id, payload, context)
    finally:
        _TURN_USAGE.reset(token)


#: The ``code`` of an ``error`` event that is the request's fault, not the service's.
_REFUSED = ("invalid_request", "not_found", "conflict")


@dataclass
class _Completion:
    """One chat completion's reply: the JSON object, or its stream of chunks. Each
    object of it repeats its ``id``, ``created`` and ``model``."""

    conversation_id: str
    model: str
    counter: UsageMetadataCallbackHandler
    """The turn's LLM usage (:func:`usage_of`)."""
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))
    draft: str = ""
    """The text streamed since the last reset (the turn dropped its draft)."""

    def _head(self, kind: str) -> dict[str, Any]:
        """The fields every object of this completion starts with."""
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}

    def reply(self, answer: AnswerOut) -> dict[str, Any]:
        """The ``chat.completion`` object answering with ``answer``."""
        return {
            **self._head("chat.completion"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": answer.answer},
                }
            ],
            "usage": usage_of(self.counter).model_dump(),
            "citations": [c.model_dump() for c in answer.citations],
            "no_answer": answer.no_answer,
            "confidence": answer.confidence,
            "sources": answer.sources,
            "conversation_id": self.conversation_id,
        }

    def chunk(self, delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        """A ``chat.completion.chunk`` with ``delta`` (and ``extra`` fields), as SSE."""
        data = {
            **self._head("chat.completion.chunk"),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
        return f"data: {json.dumps(data, default=str)}\n\n"

    async def stream(
        self, queue: asyncio.Queue[Event | None], keepalive_s: float, *, include_usage: bool
    ) -> AsyncIterator[str]:
        """The SSE chunks of the turn's events on ``queue``, ending with ``[DONE]``;
        with ``include_usage``, a last chunk with no choices carries ``usage`` before
        it."""
        yield self.chunk({"role": "assistant", "content": ""})
        async for item in drain(queue, keepalive_s=keepalive_s):
            if item["event"] == "keep-alive":
                yield KEEPALIVE_COMMENT
                continue
            for out in self._chunks(item):
                yield out
        if include_usage:
            last = {
                **self._head("chat.completion.chunk"),
                "choices": [],
                "usage": usage_of(self.counter).model_dump(),
            }
            yield f"data: {json.dumps(last)}\n\n"
        yield "data: [DONE]\n\n"

    def _chunks(self, event: Event) -> list[str]:
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
            return [f"data: {json.dumps({'error': error})}\n\n"]
        return []

    def _done(self, event: DoneEvent) -> list[str]:
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


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


def _history_from_messages(body: ChatCompletionIn) -> tuple[list[HistoryTurn], str]:
    """(history, question): the last user message is the question; the history is the
    last 5 user/assistant pairs before it, the window a stored conversation gets by
    default (``Context.history_turns``), each text cut to :data:`MAX_MESSAGE_CHARS` as a
    stored question is (a client may resend a long pasted text with every request).
    System, developer and tool messages are not read."""
    convo = [
        (i, m.role, _text(m.content))
        for i, m in enumerate(body.messages)
        if m.role in ("user", "assistant")
    ]
    if not convo or convo[-1][1] != "user":
        raise InvalidRequest(
            "messages: the last user or assistant message must be a user message (the "
            "question to answer)",
            param="messages",
            code="invalid_value",
        )
    index, _, text = convo.pop()
    question = text.strip()
    if not question or len(question) > MAX_MESSAGE_CHARS:
        got = f"{len(question)} characters" if question else "no text"
        raise InvalidRequest(
            f"messages[{index}].content: the question must have 1 to {MAX_MESSAGE_CHARS} "
            f"characters of text, it has {got}",
            param=f"messages[{index}].content",
            code="string_above_max_length" if question else "invalid_value",
        )
    turns: list[HistoryTurn] = []
    pending: str | None = None
    for _, role, text in convo[-10:]:
        text = text[:MAX_MESSAGE_CHARS]
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
