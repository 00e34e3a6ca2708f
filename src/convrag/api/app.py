"""The FastAPI application: its lifespan, middleware, error handler, routers and the
chat page's static files.

The lifespan opens the assistant (and, unless given services, the stores) once per
process and keeps what the routes share on ``app.state``: the services, the assistant,
the turn runner, the rate limiter and the API key cache. At start it marks turns and
uploads that a dead process left unfinished as failed, resumes the uploads a shutdown
stopped and, with ``CONVERSATION_TTL_DAYS`` set, starts the hourly sweep of expired
conversations (stopped first on shutdown). While it runs, it listens for the stops that
other processes sharing the database ask of this one's turns (``--workers N``).

On SIGTERM (or Ctrl-C) the server lets open connections finish for :data:`GRACEFUL_S`
before it cuts them. The turns still running :data:`STOP_TURNS_AFTER_S` after the signal
are stopped (:meth:`~convrag.api.turns.TurnRunner.stop_all`): their streams end with an
``error`` event (``shutting_down``) rather than being cut, and they are stored as
failed. The lifespan's shutdown then waits up to :data:`SHUTDOWN_TURN_WAIT_S` for any
turn still running (none, unless no signal was seen: another server, another thread)
and stops those left, and an upload's ingest stops at its next batch boundary (waited
for up to :data:`~convrag.services.STOP_WAIT_S`, with a log line saying so), to resume
at the next start, before the stores close.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import signal
import threading
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from types import FrameType
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from psycopg_pool import PoolTimeout
from pymilvus import MilvusException
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.formparsers import MultiPartException
from starlette.routing import BaseRoute, Match

from convrag import __version__
from convrag.api.deps import KeyCache, RateLimiter
from convrag.api.errors import RETRY_AFTER_S, no_route, plain_reason
from convrag.api.middleware import BodySizeLimit, EveryReply, body_limit, file_limit
from convrag.api.routers import (
    admin,
    conversations,
    documents,
    messages,
    openai,
    operations,
    ui,
    workspace,
)
from convrag.api.schemas import ValidationErrorOut
from convrag.api.turns import STOP_CHANNEL, TurnRunner
from convrag.assistant import Assistant, open_assistant, out_of_disk
from convrag.config import Settings
from convrag.conversations import sweep_periodically
from convrag.services import Services
from convrag.stores.base import INTERRUPTED_AFTER
from convrag.stores.notices import Listener
from convrag.uploads import resume_stopped_uploads

log = logging.getLogger(__name__)

#: Room for the multipart framing around an uploaded file of the maximum size.
_MULTIPART_OVERHEAD = 64 * 1024


def _summary(services: Services, supervised: Collection[str] = ()) -> str:
    """One line saying what this process serves with: the version, the data directory,
    each store embedded or external, the embedder, the LLM, web search and retention.

    ``supervised`` names the stores (``postgres``, ``milvus``) that ``convrag serve
    --workers N`` started for this worker: their URLs came from it, not from the operator,
    so they are named embedded, not external."""
    s = services.settings
    llm = s.effective_llm_model or "none (answers quote the documents)"
    ttl = f"{s.conversation_ttl_days:g} days" if s.conversation_ttl_days else "keep forever"
    by_serve = ", started by `convrag serve --workers`"
    if "postgres" in supervised:
        postgres = f"embedded{by_serve}"
    else:
        postgres = "external (DATABASE_URL)" if s.database_url else "embedded"
    if "milvus" in supervised:
        milvus = f"Lite, embedded{by_serve}"
    else:
        milvus = "external (MILVUS_URI)" if s.milvus_uri else "Lite, embedded"
    return (
        f"convrag {__version__}: data {s.data_dir}; PostgreSQL {postgres}; Milvus {milvus}; "
        f"embedder {services.embedder.name}; LLM {llm}; web search "
        f"{'on' if services.web is not None else 'off'}; reranker {s.reranker}; "
        f"retention {ttl}"
    )


def retention_notice(settings: Settings) -> str | None:
    """The start's line saying that conversations are never deleted, naming the setting
    that changes it; None when ``CONVERSATION_TTL_DAYS`` is set.

    Keeping them is the deliberate default: deleting what users wrote, on a schedule
    nobody chose, would be the surprise no operator can undo. But it is a choice an
    operator must know they made: the conversations (and their checkpoints) grow
    without bound."""
    if settings.conversation_ttl_days:
        return None
    return (
        "conversations are kept forever (CONVERSATION_TTL_DAYS is unset or 0): set "
        "CONVERSATION_TTL_DAYS=N to delete those idle for N days (hourly, and at start)"
    )


def create_app(settings: Settings | None = None, *, services: Services | None = None) -> FastAPI:
    """The FastAPI app. Without ``services`` it opens (and on shutdown stops) the stores."""
    # FastAPIOffline: /docs and /redoc from assets shipped in a wheel, not a CDN.
    app = FastAPIOffline(
        title="convrag",
        version=__version__,
        description="Conversational RAG over a workspace's documents. Streams answers with "
        "`[n]` citations as server-sent events; docs/api.md lists the event types.",
        lifespan=_lifespan(settings, services),
    )
    _add_middleware(app, settings or (services.settings if services else Settings()))
    app.exception_handler(RequestValidationError)(_validation_error)
    app.exception_handler(StarletteHTTPException)(_http_error)
    for unavailable in STORE_UNAVAILABLE:
        app.exception_handler(unavailable)(_store_unavailable)
    for module in _RESOURCES:
        app.include_router(module.router)
    # The chat page's script and style (the page itself is ``GET /``, in ``ui``).
    app.mount("/static", StaticFiles(directory=ui.STATIC_DIR), name="static")
    _document_validation_errors(app)
    return app


def _add_middleware(app: FastAPI, limits: Settings) -> None:
    """The body size limits (an upload's own, every other body's) and, outermost, the
    middleware that sees every reply, the body limit's 413 included."""
    upload = file_limit(limits.max_file_bytes, _MULTIPART_OVERHEAD)
    body = body_limit(limits.max_body_bytes, "MAX_BODY_BYTES")
    app.add_middleware(
        BodySizeLimit, limit_for=lambda path: upload if path == "/v1/documents" else body
    )
    app.add_middleware(EveryReply)  # outermost: the body limit's 413 is a reply too


def _lifespan(
    settings: Settings | None, services: Services | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's lifespan (see the module's docstring): the assistant opened, the
    start's recovery and background tasks, the turn runner and what the routes share on
    ``app.state``; at the end, the running turns let finish, then stopped."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            assistant: Assistant = await stack.enter_async_context(
                open_assistant(settings, services=services)
            )
            await _start(assistant.services)
            _start_background_tasks(stack, assistant)
            runner = await _serve_turns(app, stack, assistant)
            yield
            await _finish_turns(runner)

    return lifespan


async def _start(services: Services) -> None:
    """The start's own steps: say what this process serves with (and that conversations
    are kept forever, when they are), then mark what a dead process left unfinished as
    failed and resume the uploads a shutdown stopped."""
    services.warm_after_ingest = True
    log.info("%s", _summary(services, supervised_stores()))
    if notice := retention_notice(services.settings):
        log.info("%s", notice)
    await _recover_interrupted(services)
    await _resume_stopped_uploads(services)


def _start_background_tasks(stack: AsyncExitStack, assistant: Assistant) -> None:
    """Start the watch on the supervising process (in a ``--workers N`` worker) and the
    hourly sweep of expired conversations (with a retention set), each cancelled on
    shutdown before the stores close."""
    supervisor = os.environ.get(SUPERVISOR_ENV)
    if supervisor:
        watcher = asyncio.create_task(_exit_with_supervisor(int(supervisor)))
        stack.push_async_callback(_cancel, watcher)
    if assistant.services.settings.conversation_ttl_days:
        sweeper = asyncio.create_task(sweep_periodically(assistant))
        stack.push_async_callback(_cancel, sweeper)  # before the stores close


async def _serve_turns(app: FastAPI, stack: AsyncExitStack, assistant: Assistant) -> TurnRunner:
    """Put what the routes share on ``app.state`` (:func:`share`), listen for the stops
    other processes ask of this one's turns, and stop the turns shortly after a shutdown
    signal."""
    runner = share(app, assistant)
    stack.push_async_callback(runner.close)
    # Stops that other processes on the database ask for, of the turns this one
    # answers; handed to the runner the routes use (app.state), as a stop here is.
    await stack.enter_async_context(
        Listener.open(
            assistant.services.database_url,
            STOP_CHANNEL,
            lambda payload: app.state.runner.stop_requested(payload),
        )
    )
    stack.callback(_on_shutdown_signal(lambda: runner.stop_after(STOP_TURNS_AFTER_S)))
    return runner


def share(app: FastAPI, assistant: Assistant) -> TurnRunner:
    """Put what the routes share on ``app.state``: the services, the assistant, a new turn
    runner (returned), the rate limiter and the API key cache. The lifespan calls it as
    the app starts; the routers' unit tests call it with fakes, without a lifespan."""
    app.state.services = assistant.services
    app.state.assistant = assistant
    runner = app.state.runner = TurnRunner(assistant)
    app.state.limiter = RateLimiter(assistant.services.settings.rate_limit_per_minute)
    app.state.keys = KeyCache()
    return runner


async def _finish_turns(runner: TurnRunner) -> None:
    """Let running turns finish (they persist) before the stores close; a turn still
    running after :data:`SHUTDOWN_TURN_WAIT_S` is stopped, and stored as such, rather
    than left ``processing`` until the next start."""
    pending = list(runner.active.values())
    if pending:
        await asyncio.wait(pending, timeout=SHUTDOWN_TURN_WAIT_S)
    await runner.stop_all()


def _document_validation_errors(app: FastAPI) -> None:
    """Make the OpenAPI document describe the 422 body that :func:`_validation_error`
    sends. FastAPI documents every route's 422 as its own default shape (``detail``: a
    list), which this service never sends; each reference to it is pointed at
    :class:`~convrag.api.schemas.ValidationErrorOut` instead."""
    default_ref = "#/components/schemas/HTTPValidationError"
    ours = ValidationErrorOut.model_json_schema(ref_template="#/components/schemas/{model}")

    def replace(node: Any) -> Any:
        if isinstance(node, dict):
            if node.get("$ref") == default_ref:
                return {"$ref": f"#/components/schemas/{ValidationErrorOut.__name__}"}
            return {k: replace(v) for k, v in node.items()}
        if isinstance(node, list):
            return [replace(v) for v in node]
        return node

    generate = app.openapi
    done: list[dict[str, Any]] = []  # the rewritten document, once made

    def openapi() -> dict[str, Any]:
        if not done:
            document = replace(generate())
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            for name in ("HTTPValidationError", "ValidationError"):
                schemas.pop(name, None)
            schemas.update(ours.pop("$defs", {}))
            schemas[ValidationErrorOut.__name__] = ours
            app.openapi_schema = document
            done.append(document)
        return done[0]

    app.openapi = openapi  # type: ignore[method-assign]


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel a background task and wait until it has stopped."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


GRACEFUL_S = 5
"""Seconds uvicorn lets open connections (answer streams) finish after SIGTERM; with the
lifespan's own bounded steps, a shutdown takes about 10 s at most."""

STOP_TURNS_AFTER_S = GRACEFUL_S - 1
"""Seconds after SIGTERM at which the turns still running are stopped: their streams
then end with an ``error`` event (sent at once, before the turn's row is written)
before uvicorn cuts open connections at :data:`GRACEFUL_S`."""

SHUTDOWN_TURN_WAIT_S = 3.0
"""How long shutdown waits for running turns, after the HTTP server's own graceful
period (:data:`GRACEFUL_S`) in which their streams could end."""

#: The signals on which uvicorn shuts down gracefully.
SHUTDOWN_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _on_shutdown_signal(callback: Callable[[], None]) -> Callable[[], None]:
    """Run ``callback`` on the event loop when a shutdown signal arrives, then let the
    server's own handler (uvicorn's) act on it; returns what puts its handlers back.

    The server tells the app nothing until its graceful period is over and the
    connections are cut; the signal is the only earlier word. Only a Python handler is
    chained (the server's), and only in the main thread, where signals are handled: an
    app served otherwise is stopped at the lifespan's end instead.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    loop = asyncio.get_running_loop()
    chained: dict[int, Callable[[int, FrameType | None], Any]] = {}

    def handler(signum: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(callback)
        chained[signum](signum, frame)

    for sig in SHUTDOWN_SIGNALS:
        previous = signal.getsignal(sig)
        if callable(previous):
            chained[sig] = previous
            signal.signal(sig, handler)

    def restore() -> None:
        for sig, previous in chained.items():
            if signal.getsignal(sig) is handler:
                signal.signal(sig, previous)

    return restore


async def _resume_stopped_uploads(services: Services) -> None:
    """At start: uploads whose ingest a shutdown stopped go on in the background. A
    database that is not there yet only delays this to the next start."""
    try:
        await resume_stopped_uploads(services)
    except Exception:
        log.warning("resuming the uploads a shutdown stopped failed", exc_info=True)


async def _recover_interrupted(services: Services) -> None:
    """At start: turns and uploads left ``processing`` by a process that died are marked
    ``failed`` (the client sees why and asks or uploads again). Only rows older than
    :data:`~convrag.stores.base.INTERRUPTED_AFTER` are touched, so the live turns and
    ingests of other workers sharing the database are left alone. A database that is not
    there yet only delays this to the next start."""
    try:
        turns, docs = await services.db.recover_interrupted(INTERRUPTED_AFTER)
    except Exception:
        log.warning("recovering interrupted turns and uploads failed", exc_info=True)
        return
    if turns or docs:
        log.warning("marked %d interrupted turns and %d interrupted uploads failed", turns, docs)


SUPERVISOR_ENV = "CONVRAG_SUPERVISOR_PID"
"""Set by ``convrag serve --workers N`` for its workers: the pid of the process that
supervises them and owns the embedded stores."""

SUPERVISED_STORES_ENV = "CONVRAG_SUPERVISED_STORES"
"""Set by ``convrag serve --workers N`` for its workers: the embedded stores it started for
them (``postgres``, ``milvus``, comma-separated), whose URLs it passes as ``DATABASE_URL``
and ``MILVUS_URI``."""


def supervised_stores() -> frozenset[str]:
    """The stores that ``convrag serve --workers N`` started for this worker (none
    outside such a worker)."""
    if not os.environ.get(SUPERVISOR_ENV):
        return frozenset()
    names = os.environ.get(SUPERVISED_STORES_ENV, "").split(",")
    return frozenset(n.strip() for n in names if n.strip())


async def _exit_with_supervisor(pid: int, every_s: float = 1.0) -> None:
    """Stop this worker (SIGTERM to itself: uvicorn's graceful shutdown) once the process
    that supervises it is gone. Killed outright, it cannot stop its workers, which would
    go on serving the port with stores that nobody owns, and block a restart."""
    while os.getppid() == pid:
        await asyncio.sleep(every_s)
    log.warning("the supervising process %d is gone; this worker stops", pid)
    os.kill(os.getpid(), signal.SIGTERM)


def _problem(error: Any) -> dict[str, str]:
    """One validation problem. A body that is not JSON has no field: its location is a
    character offset, which is named as such with the parser's reason."""
    if error["type"] == "json_invalid":
        offset = next((p for p in error["loc"] if isinstance(p, int)), None)
        reason = (error.get("ctx") or {}).get("error", "")
        where = f" at character {offset}" if offset is not None else ""
        return {
            "field": "",
            "message": f"the body is not valid JSON{where}: {reason}".rstrip(": "),
            "type": "json_invalid",
        }
    field = ".".join(str(p) for p in error["loc"] if p != "body")
    if "Expected UploadFile" in error["msg"]:  # a form field where a file part belongs
        return {
            "field": field,
            "message": "expected a file: send it as a multipart file part with a filename "
            f"(curl -F {field}=@notes.md)",
            "type": "file_expected",
        }
    message = str(error["msg"]).removeprefix("Value error, ")  # pydantic's wrapper, not ours
    return {"field": field, "message": message, "type": error["type"]}


async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    """422 with one readable ``detail`` line and the problems field by field; 415 when a
    JSON body was refused because it was sent as another type (a form, plain text)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    sent = f"Content-Type: {media} is" if media else "a body without a Content-Type is"
    if media != "multipart/form-data" and any(
        tuple(e["loc"]) == ("body", "file") and e["type"] == "missing" for e in exc.errors()
    ):
        return JSONResponse(
            {
                "detail": f"{sent} not read here; send the file as multipart/form-data with "
                "one part named `file` (curl -F file=@notes.md)"
            },
            status_code=415,
        )
    # A JSON route reads a body as JSON only when its Content-Type says so: any other
    # type (a form, plain text, multipart) or none at all leaves the route no object.
    # No body at all (and no type) is the 422 of a missing body instead.
    if "json" not in media and any(
        tuple(e["loc"]) == ("body",) and (media or e["type"] != "missing") for e in exc.errors()
    ):
        return JSONResponse(
            {
                "detail": f"{sent} not read here; send the body as JSON "
                "with Content-Type: application/json"
            },
            status_code=415,
        )
    problems = [_problem(e) for e in exc.errors()]
    summary = "; ".join(f"{p['field'] or 'body'}: {p['message']}" for p in problems)
    return JSONResponse({"detail": summary, "errors": problems}, status_code=422)


async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
    """FastAPI's answer for an ``HTTPException``, except for a body that could not be
    parsed at all (FastAPI and Starlette answer a bare 400 for it): that is a 422 saying
    what is wrong with the body, the same answer as for a body that is not JSON; and the
    router's bare 404 and 405 name the request line (:func:`~convrag.api.errors.no_route`)."""
    if exc.status_code == 422 and isinstance(exc.detail, str):
        return _route_problem(exc.detail, exc.headers)
    if (exc.status_code, exc.detail) in _ROUTING_ERRORS:  # the router's, with no detail
        routes = _routes_at(request) if exc.status_code == 405 else []
        allowed = sorted({m for r in routes for m in getattr(r, "methods", None) or ()})
        detail = no_route(request.method, request.url.path, allowed)
        headers = {**(exc.headers or {}), "Allow": ", ".join(allowed)} if allowed else exc.headers
        reply = await http_exception_handler(
            request, StarletteHTTPException(exc.status_code, detail, headers)
        )
        # An OpenAI client shows only an error in OpenAI's shape (GET /v1/chat/completions).
        if any(isinstance(r, openai.OpenAIRoute) for r in routes):
            return openai.reshaped(reply)
        return reply
    problem = _unparsable_body(exc) if exc.status_code == 400 else None
    if problem is None:
        return await http_exception_handler(request, exc)
    return JSONResponse({"detail": f"body: {problem['message']}", "errors": [problem]}, 422)


#: What Starlette answers when no route takes a request: its status's bare phrase.
_ROUTING_ERRORS = {(404, "Not Found"), (405, "Method Not Allowed")}


#: The routers, one per resource, in the order the app includes them.
_RESOURCES = (operations, conversations, messages, openai, documents, workspace, ui, admin)


def _routes_at(request: Request) -> list[BaseRoute]:
    """Every route at the request's path that does not take its method: between them, the
    methods the path takes. The router's own 405 names only the first such route's
    methods, and each of these routes takes one."""
    return [
        route
        for module in _RESOURCES
        for route in module.router.routes
        if route.matches(request.scope)[0] is Match.PARTIAL
    ]


_FIELD = re.compile(r"[A-Za-z_][\w.\-]*")


def _route_problem(detail: str, headers: Mapping[str, str] | None) -> JSONResponse:
    """A route's own 422 (``"field: what is wrong"``) in the shape of the framework's: the
    ``detail`` line and the same problem in ``errors``, so that clients read every 422 alike."""
    field, _, message = detail.partition(": ")
    if not message or not _FIELD.fullmatch(field):
        field, message = "", detail
    problem = {"field": field, "message": message, "type": "value_error"}
    return JSONResponse({"detail": detail, "errors": [problem]}, 422, headers=headers)


def _unparsable_body(exc: StarletteHTTPException) -> dict[str, str] | None:
    """The problem of a body that the framework could not parse, from the error that
    made it answer 400; None for any other 400."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(cause, UnicodeDecodeError):
        return {
            "field": "",
            "message": f"the body is not valid JSON: it is not UTF-8 text "
            f"(byte {cause.start}: {cause.reason})",
            "type": "json_invalid",
        }
    if isinstance(cause, RecursionError):
        return {
            "field": "",
            "message": "the body is not valid JSON: it is nested too deeply",
            "type": "json_invalid",
        }
    if isinstance(cause, MultiPartException):
        return {
            "field": "",
            "message": f"the body is not valid multipart/form-data ({cause.message.rstrip('.')}); "
            "send the file as the multipart field `file`",
            "type": "multipart_invalid",
        }
    return None


#: Errors that mean a store is down or overloaded, not that the request is wrong.
STORE_UNAVAILABLE: tuple[type[Exception], ...] = (
    psycopg.OperationalError,
    PoolTimeout,
    MilvusException,
)


async def _store_unavailable(_: Request, exc: Exception) -> JSONResponse:
    """503 with ``Retry-After`` and a JSON body: a store is down or restarting (the pool
    reconnects by itself), so the same request can simply be retried. Neither the store's
    own message, which names internal addresses, nor its exception's class is echoed:
    ``error`` says which store, ``detail`` what to do (:func:`plain_reason`)."""
    store = "vector_index" if isinstance(exc, MilvusException) else "database"
    return JSONResponse(
        {
            "detail": plain_reason(exc),
            "error": "disk_full" if out_of_disk(exc) else f"{store}_unavailable",
        },
        status_code=503,
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )
