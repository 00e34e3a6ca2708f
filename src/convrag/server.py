"""The HTTP service: conversations with SSE streaming, an OpenAI-compatible endpoint,
documents, sources, health and metrics.

Every ``/v1`` route needs ``Authorization: Bearer <key>``; a key belongs to one
workspace, and another workspace's ids answer 404, never data. Start it with
``convrag serve``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, File, HTTPException, Request, Response, UploadFile, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from convrag import __version__
from convrag.api.deps import (
    AssistantDep,
    KeyCache,
    RateLimiter,
    RunnerDep,
    ServicesDep,
    SettingsDep,
    WorkspaceDep,
)
from convrag.api.metrics import HTTP_ERRORS, REGISTRY
from convrag.api.schemas import (
    AnswerOut,
    ChatCompletionIn,
    CitationOut,
    ConversationDetail,
    ConversationOut,
    DocumentOut,
    HealthOut,
    MessageIn,
    RagOptions,
    SourceOut,
    TurnOut,
)
from convrag.api.turns import ConversationBusy, TurnResult, TurnRunner, drain
from convrag.assistant import Assistant, open_assistant
from convrag.config import Settings
from convrag.graph.context import Context
from convrag.graph.state import HistoryTurn
from convrag.ingest import SUPPORTED, IngestError, delete_document, ingest_documents, load_path
from convrag.rewriting.contextualizer import extract_entities
from convrag.services import Services

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class BodySizeLimit:
    """413 for bodies over the limit, whether declared by Content-Length or streamed."""

    def __init__(self, app: ASGIApp, limit_for: Callable[[str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _too_large(limit, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _BodyTooLarge:
            await _too_large(limit, send)


class _BodyTooLarge(Exception):
    pass


async def _too_large(limit: int, send: Send) -> None:
    body = json.dumps({"detail": f"request body is over the {limit} byte limit"}).encode()
    HTTP_ERRORS.labels("413").inc()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> FastAPI:
    """The FastAPI app. Without ``services`` it opens (and on shutdown stops) the stores."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            assistant: Assistant = await stack.enter_async_context(
                open_assistant(settings, services=services)
            )
            assistant.services.warm_after_ingest = True
            app.state.services = assistant.services
            app.state.assistant = assistant
            app.state.runner = TurnRunner(assistant)
            app.state.limiter = RateLimiter(assistant.services.settings.rate_limit_per_minute)
            app.state.keys = KeyCache()
            yield
            # Let running turns finish (they persist) before the stores close.
            pending = list(app.state.runner.active.values())
            if pending:
                await asyncio.wait(pending, timeout=30)

    app = FastAPI(
        title="convrag",
        version=__version__,
        description="Conversational RAG over a workspace's documents. Streams answers with "
        "`[n]` citations as server-sent events; see the README for the event types.",
        lifespan=lifespan,
    )
    file_limit = (settings or (services.settings if services else Settings())).max_file_bytes
    body_limit = (settings or (services.settings if services else Settings())).max_body_bytes
    app.add_middleware(
        BodySizeLimit,
        limit_for=lambda path: file_limit + 64 * 1024 if path == "/v1/documents" else body_limit,
    )

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        HTTP_ERRORS.labels("422").inc()
        problems = [
            {
                "field": ".".join(str(p) for p in e["loc"] if p != "body"),
                "message": e["msg"],
                "type": e["type"],
            }
            for e in exc.errors()
        ]
        summary = "; ".join(f"{p['field'] or 'body'}: {p['message']}" for p in problems)
        return JSONResponse({"detail": summary, "errors": problems}, status_code=422)

    _routes(app)
    return app


def _not_found(what: str, ident: str) -> HTTPException:
    HTTP_ERRORS.labels("404").inc()
    return HTTPException(status.HTTP_404_NOT_FOUND, f"{what} {ident} not found")


async def owned_conversation(
    conversation_id: str, workspace: WorkspaceDep, services: ServicesDep
) -> str:
    """The path's conversation id, or 404 when it is not this workspace's."""
    if not await services.db.conversation_exists(workspace, conversation_id):
        raise _not_found("conversation", conversation_id)
    return conversation_id


OwnedConversation = Annotated[str, Depends(owned_conversation)]


def _context(workspace: str, rag: RagOptions) -> Context:
    return Context(
        workspace_id=workspace,
        rag_enabled=rag.enabled,
        top_k=rag.top_k,
        score_threshold=rag.threshold,
        web_search=rag.web_search,
    )


def _sse(name: str, data: dict[str, Any]) -> str:
    return f"event: {name}\ndata: {json.dumps(data, default=str)}\n\n"


def _routes(app: FastAPI) -> None:
    @app.get("/healthz", response_model=HealthOut, tags=["operations"])
    async def healthz(services: ServicesDep, response: Response) -> HealthOut:
        """Whether Postgres and Milvus answer."""
        pg = milvus = True
        try:
            async with services.db.pool.connection(timeout=2) as conn:
                await conn.execute("SELECT 1")
        except Exception:
            pg = False
        try:
            await asyncio.wait_for(
                asyncio.to_thread(services.index.client.has_collection, services.index.collection),
                2,
            )
        except Exception:
            milvus = False
        ok = pg and milvus
        if not ok:
            response.status_code = status.HTTP_503_SERVICE_UNAVAILABLE
        return HealthOut(status="ok" if ok else "degraded", postgres=pg, milvus=milvus)

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    async def metrics() -> Response:
        """Prometheus metrics."""
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    # -- conversations -------------------------------------------------------

    @app.post(
        "/v1/conversations", response_model=ConversationOut, status_code=201, tags=["conversations"]
    )
    async def create_conversation(
        workspace: WorkspaceDep, services: ServicesDep
    ) -> ConversationOut:
        return ConversationOut(conversation_id=await services.db.create_conversation(workspace))

    @app.get(
        "/v1/conversations/{conversation_id}",
        response_model=ConversationDetail,
        tags=["conversations"],
    )
    async def get_conversation(
        conversation_id: OwnedConversation, workspace: WorkspaceDep, services: ServicesDep
    ) -> ConversationDetail:
        turns = await services.db.all_turns(workspace, conversation_id)
        return ConversationDetail(
            conversation_id=conversation_id,
            turns=[
                TurnOut(
                    id=t.id,
                    turn_number=t.turn_number,
                    question=t.question,
                    answer=t.answer,
                    contextualized_query=t.contextualized_query,
                    repetition_detected=t.repetition_detected,
                    web_search_triggered=t.web_search_triggered,
                    created_at=t.created_at,
                )
                for t in turns
            ],
        )

    @app.delete("/v1/conversations/{conversation_id}", status_code=204, tags=["conversations"])
    async def delete_conversation(
        conversation_id: OwnedConversation,
        workspace: WorkspaceDep,
        services: ServicesDep,
        assistant: AssistantDep,
        runner: RunnerDep,
    ) -> Response:
        """Delete the conversation, its turns, citations, checkpoints and memory vectors."""
        if conversation_id in runner.active:
            raise HTTPException(
                status.HTTP_409_CONFLICT,
                "the conversation is answering a message; retry when it is done",
            )
        await services.db.delete_conversation(workspace, conversation_id)
        if assistant.graph.checkpointer is not None:
            await assistant.graph.checkpointer.adelete_thread(conversation_id)  # type: ignore[union-attr]
        await asyncio.to_thread(services.index.delete_conversation, workspace, conversation_id)
        return Response(status_code=204)

    @app.post(
        "/v1/conversations/{conversation_id}/messages",
        tags=["conversations"],
        responses={
            200: {
                "content": {
                    "text/event-stream": {},
                    "application/json": {"schema": {"$ref": "#/components/schemas/AnswerOut"}},
                },
                "description": "SSE events (default) or, with `Accept: application/json`, "
                "the whole answer.",
            },
            409: {"description": "The conversation is still answering a message."},
        },
    )
    async def post_message(
        conversation_id: OwnedConversation,
        body: MessageIn,
        request: Request,
        workspace: WorkspaceDep,
        services: ServicesDep,
        runner: RunnerDep,
    ) -> Response:
        """Ask a question in a conversation; the answer streams as typed SSE events."""
        content = body.content.strip()
        if not content:
            raise HTTPException(422, "content: must not be blank")
        payload = {
            "message": content,
            "conversation_id": conversation_id,
            "workspace_id": workspace,
        }
        try:
            queue, task = runner.start(conversation_id, payload, _context(workspace, body.rag))
        except ConversationBusy:
            HTTP_ERRORS.labels("409").inc()
            raise HTTPException(
                status.HTTP_409_CONFLICT,
                "the conversation is still answering the previous message; retry when it is "
                "done (messages are not queued)",
            ) from None
        if "application/json" in request.headers.get(
            "accept", ""
        ) and "text/event-stream" not in request.headers.get("accept", ""):
            async for _ in drain(queue):
                pass
            answer = _answer_json(conversation_id, await task)
            return JSONResponse(answer.model_dump(mode="json"))

        async def events() -> AsyncIterator[str]:
            async for name, data in drain(queue):
                yield _sse(name, data)

        return StreamingResponse(events(), media_type="text/event-stream", headers=SSE_HEADERS)

    @app.get(
        "/v1/messages/{message_id}/sources",
        response_model=list[CitationOut],
        tags=["conversations"],
    )
    async def message_sources(
        message_id: str, workspace: WorkspaceDep, services: ServicesDep
    ) -> list[CitationOut]:
        """The stored citations of an answer (a turn id from the `done` event)."""
        rows = await services.db.citations(workspace, message_id)
        if rows is None:
            raise _not_found("message", message_id)
        return [
            CitationOut(
                marker=r["citation_marker"],
                position=r["position_in_response"],
                source_type=r["source_type"],
                source_id=r["source_id"],
                document_id=r["document_id"],
                url=r["source_url"],
                relevance_score=r["relevance_score"],
                content_snippet=r["content_snippet"] or "",
            )
            for r in rows
        ]

    # -- OpenAI-compatible ---------------------------------------------------

    @app.post("/v1/chat/completions", tags=["openai"])
    async def chat_completions(
        body: ChatCompletionIn,
        workspace: WorkspaceDep,
        services: ServicesDep,
        runner: RunnerDep,
    ) -> Response:
        """OpenAI's chat completions shape; history comes from the messages (seed 000)."""
        turns, question = _history_from_messages(body)
        if not question or len(question) > 8000:
            raise HTTPException(
                422, "messages: the last message must be a user message of 1 to 8000 characters"
            )
        conversation_id = await services.db.create_conversation(workspace)
        payload = {
            "message": question,
            "conversation_id": conversation_id,
            "workspace_id": workspace,
            "history_override": turns,
        }
        rag = body.workspace_rag or RagOptions()
        queue, task = runner.start(conversation_id, payload, _context(workspace, rag))
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if not body.stream:
            async for _ in drain(queue):
                pass
            result = await task
            answer = _answer_json(conversation_id, result)
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
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                    "citations": [c.model_dump() for c in answer.citations],
                    "sources": [s.model_dump() for s in answer.sources],
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
            async for name, data in drain(queue):
                if name == "token":
                    yield chunk({"content": data["text"]})
                elif name == "done":
                    yield chunk({}, "stop", citations=data["citations"])
                elif name == "error":
                    yield f"data: {json.dumps({'error': data})}\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)

    # -- documents -----------------------------------------------------------

    @app.post("/v1/documents", response_model=DocumentOut, status_code=202, tags=["documents"])
    async def upload_document(
        workspace: WorkspaceDep,
        services: ServicesDep,
        settings: SettingsDep,
        file: Annotated[UploadFile, File(description="A .txt, .md, .html, .pdf or .jsonl file")],
    ) -> DocumentOut:
        """Upload a file; it is ingested in the background (poll `GET /v1/documents/{id}`)."""
        name = Path(file.filename or "").name
        if not name:
            raise HTTPException(422, "file: a filename is required")
        lowered = name.lower()
        if not any(lowered.endswith(s) for s in SUPPORTED):
            raise HTTPException(
                status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
                f"file: unsupported format of {name!r}; supported: {', '.join(SUPPORTED)}",
            )
        data = await file.read(settings.max_file_bytes + 1)
        if len(data) > settings.max_file_bytes:
            raise HTTPException(
                status.HTTP_413_CONTENT_TOO_LARGE,
                f"file: over the {settings.max_file_bytes} byte limit",
            )
        upload_dir = settings.data_dir / "uploads" / workspace / uuid.uuid4().hex
        upload_dir.mkdir(parents=True, exist_ok=True)
        path = upload_dir / name
        path.write_bytes(data)
        try:
            docs = load_path(path, max_bytes=settings.max_file_bytes)
        except IngestError as exc:
            path.unlink(missing_ok=True)
            raise HTTPException(422, f"file: {str(exc).replace(str(path), name)}") from exc
        if len(docs) == 1:
            docs = [
                type(docs[0])(
                    f"upload:{name}",
                    docs[0].title,
                    docs[0].text,
                    {**docs[0].metadata, "path": str(path), "filename": name},
                )
            ]
        from convrag.ingest import document_id_for

        document_id = document_id_for(workspace, docs[0].source)
        for d in docs:
            await services.db.upsert_document_status(
                workspace,
                document_id_for(workspace, d.source),
                d.source,
                status="processing",
                title=d.title,
            )

        async def run() -> None:
            try:
                await ingest_documents(services, workspace, docs)
            except Exception as exc:  # recorded on the document, readable by the client
                for d in docs:
                    await services.db.upsert_document_status(
                        workspace,
                        document_id_for(workspace, d.source),
                        d.source,
                        status="failed",
                        error=str(exc)[:500],
                    )

        services.spawn(run())
        row = await services.db.get_document(workspace, document_id)
        assert row is not None
        return _doc_out(row)

    @app.get("/v1/documents", response_model=list[DocumentOut], tags=["documents"])
    async def list_documents(workspace: WorkspaceDep, services: ServicesDep) -> list[DocumentOut]:
        return [_doc_out(r) for r in await services.db.list_documents(workspace)]

    @app.get("/v1/documents/{document_id}", response_model=DocumentOut, tags=["documents"])
    async def get_document(
        document_id: str, workspace: WorkspaceDep, services: ServicesDep
    ) -> DocumentOut:
        row = await services.db.get_document(workspace, document_id)
        if row is None:
            raise _not_found("document", document_id)
        return _doc_out(row)

    @app.delete("/v1/documents/{document_id}", status_code=204, tags=["documents"])
    async def remove_document(
        document_id: str, workspace: WorkspaceDep, services: ServicesDep
    ) -> Response:
        """Delete a document and every chunk of it, in Postgres and Milvus."""
        if not await delete_document(services, workspace, document_id):
            raise _not_found("document", document_id)
        return Response(status_code=204)


def _doc_out(row: dict[str, Any]) -> DocumentOut:
    return DocumentOut(
        id=str(row["id"]),
        source=row["source"],
        title=row["title"],
        status=row["status"],
        error=row["error"],
        n_chunks=row["n_chunks"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )


def _answer_json(conversation_id: str, result: TurnResult) -> AnswerOut:
    if result.error:
        # Bad input was refused before the turn started; a failed turn means a store or
        # provider is down: 503, retryable.
        code = 503 if result.error["code"] == "turn_failed" else 422
        raise HTTPException(code, result.error["message"])
    s = result.state
    return AnswerOut(
        conversation_id=conversation_id,
        turn_id=s["turn_id"],
        answer=s.get("answer", ""),
        classification=s.get("classification", "standalone"),
        rewritten_query=s.get("rewritten_query", s.get("message", "")),
        sources=[SourceOut(**src) for src in result.sources],
        citations=[CitationOut.from_state(c) for c in s.get("citations", [])],
        repetition_detected=bool(s.get("regenerations")),
        flags=s.get("flags", {}),
        timings_ms=s.get("timings", {}),
    )


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


def _history_from_messages(body: ChatCompletionIn) -> tuple[list[HistoryTurn], str]:
    """(history, question): the last user message is the question; the history is the
    last 5 user/assistant turns before it (seed 000)."""
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


def run(host: str, port: int, settings: Settings | None = None) -> None:
    """Serve with uvicorn; SIGTERM stops the embedded stores through the lifespan."""
    import uvicorn

    uvicorn.run(
        create_app(settings), host=host, port=port, log_level="info", timeout_graceful_shutdown=10
    )
