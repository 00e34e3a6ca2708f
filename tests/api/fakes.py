"""In-memory fakes of what the HTTP routes reach, for the routers' unit tests: the
database (:mod:`tests.api.fake_database`), the vector index, the embedders and the graph.
No embedded server runs and no process starts: :func:`fake_app` serves the real app
(``create_app``) over them, and :func:`client` talks to it in-process (httpx's
``ASGITransport``).

Each fake keeps only what a route reads back, with the behaviour of the store it stands
for where a route depends on it (workspace isolation, keyset pages, one rating per answer,
a delete mark). The searcher is not faked: no route reaches it
(the turns do, through the graph, which :class:`FixedAnswerGraph` stands in for).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, TypeVar, cast

import httpx
from fastapi import FastAPI
from langgraph.graph.state import CompiledStateGraph

from convrag.api.app import create_app, share
from convrag.assistant import Assistant
from convrag.config import Settings
from convrag.context import Context
from convrag.embeddings import BulkEmbedder, Embedder, RoundRobin
from convrag.retrieval.search import HybridSearcher
from convrag.services import Services
from convrag.state import InputState
from convrag.stores.database import Database
from convrag.stores.vectors import VectorIndex
from tests.api.fake_database import FakeDatabase
from tests.samples import cited

T = TypeVar("T")


@dataclass
class FakeIndex:
    """The vector index: says whether it is usable, and records the deletes asked of it."""

    problem_text: str | None = None
    deleted: list[tuple[str, str]] = field(default_factory=list)
    """``(workspace, document or conversation id)`` of each delete, in order."""

    def problem(self) -> str | None:
        return self.problem_text

    def delete_document(self, workspace_id: str, document_id: str) -> None:
        self.deleted.append((workspace_id, document_id))

    def delete_conversation(self, workspace_id: str, conversation_id: str) -> None:
        self.deleted.append((workspace_id, conversation_id))


@dataclass
class FakeEmbedder:
    """An embedder by name only: no route embeds."""

    name: str = "fake-embedder"
    dim: int = 4


class FakeBulk:
    """Bulk work run in place (reading an uploaded file); it embeds nothing."""

    def __init__(self) -> None:
        self.turns = RoundRobin()

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return fn(*args, **kwargs)

    async def read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return fn(*args, **kwargs)


@dataclass
class FakeServices(Services):
    """:class:`~convrag.services.Services` whose background work is recorded, not run: an
    upload's ingest (the ingest's own tests cover it) is named in ``spawned``."""

    spawned: list[str] = field(default_factory=list)

    def spawn(self, coro: Coroutine[Any, Any, None], *, ingest_of: str | None = None) -> None:
        coro.close()
        self.spawned.append(ingest_of or "")


# -- the graph ---------------------------------------------------------------------

ANSWER = "Prasad earns 90,000 a year [1]."
"""What :class:`FixedAnswerGraph` answers every question with."""

SOURCE, CITATION = cited(
    ANSWER,
    id="7f0c1b9e-35d4-4c57-8f5c-0d5b7d7c2a11",
    source_type="document",
    score=0.9,
    document_id="4b3f7a2e-9d1c-4e8b-a6f0-2c5d8e9f1a3b",
    title="Employees",
    text="Prasad Chaudhari, salary 90,000",
    page=None,
    section=None,
)
"""The one source of its answers, and the citation of its answer's ``[1]``."""


@dataclass
class FixedAnswerGraph:
    """The compiled graph, as the turn runner streams it: every run answers
    :data:`ANSWER`, citing :data:`SOURCE`, and stores its turn in ``db`` (as
    ``load_history`` and ``persist`` do: ``processing``, then ``done``).

    With ``hold`` set, a run waits after its question is stored until the event is set
    (a turn still being answered); ``started`` is set as each run's question is stored.
    With ``fail`` set, a run raises it after its sources, as a node whose store or LLM
    failed does.
    """

    db: FakeDatabase
    hold: asyncio.Event | None = None
    fail: Exception | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    runs: list[InputState] = field(default_factory=list)

    async def astream(
        self, payload: InputState, config: Any, *, context: Context, **_: Any
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        self.runs.append(payload)
        workspace, conversation_id = context.workspace_id, payload["conversation_id"]
        request = payload["turn_request"]
        assert request is not None, "the turn runner gives every run its turn id"
        turn_id = request["turn_id"]
        question = payload["message"]
        self.db.turns.add_turn(
            workspace, conversation_id, question, turn_id=turn_id, status="processing"
        )
        self.started.set()
        yield "custom", {"event": "sources", "sources": [SOURCE]}
        if self.hold is not None:
            await self.hold.wait()
        if self.fail is not None:
            raise self.fail
        for word in ANSWER.split(" "):
            yield "custom", {"event": "token", "text": word if word == "Prasad" else f" {word}"}
        self.db.turns.add_turn(
            workspace,
            conversation_id,
            question,
            ANSWER,
            turn_id=turn_id,
            sources=[SOURCE],
            citations=[CITATION],
        )
        yield "updates", {"persist": {}}
        yield (
            "values",
            {
                "message": question,
                "turn_id": turn_id,
                "answer": ANSWER,
                "citations": [CITATION],
                "classification": "standalone",
                "rewritten_query": question,
                "flags": {},
                "timings": {"total": 1.0},
            },
        )


# -- the app -----------------------------------------------------------------------


@dataclass
class FakeStack:
    """The fakes an app serves with, for a test to seed and to inspect."""

    db: FakeDatabase
    index: FakeIndex
    graph: FixedAnswerGraph
    services: FakeServices

    async def key(self, workspace_id: str) -> dict[str, str]:
        """The ``Authorization`` header of a new API key of ``workspace_id``."""
        return {"Authorization": f"Bearer {await self.db.workspaces.create_api_key(workspace_id)}"}


@cache
def _default_settings() -> Settings:
    """The settings of the environment, read once (reading them takes tens of ms)."""
    return Settings()


def fake_stack(data_dir: Path, **settings: Any) -> FakeStack:
    """Fakes of every service the routes reach, with the default settings but
    ``data_dir`` and ``settings`` (``rate_limit_per_minute=2``...)."""
    db, index = FakeDatabase(), FakeIndex()
    embedder = FakeEmbedder()
    services = FakeServices(
        settings=_default_settings().model_copy(update={"data_dir": data_dir, **settings}),
        db=cast(Database, db),
        index=cast(VectorIndex, index),
        embedder=cast(Embedder, embedder),
        searcher=cast(HybridSearcher, None),  # no route reaches it
        database_url="",
        milvus_uri="",
        bulk=cast(BulkEmbedder, FakeBulk()),
    )
    return FakeStack(db, index, FixedAnswerGraph(db), services)


def fake_app(stack: FakeStack) -> FastAPI:
    """The real app (``create_app``) serving ``stack``, its state shared as its lifespan
    shares it (:func:`~convrag.api.app.share`), without the lifespan's start (no
    listener on a database, no recovery, no retention sweep)."""
    settings = stack.services.settings
    app = _app(settings.max_file_bytes, settings.max_body_bytes)
    graph = cast(CompiledStateGraph[Any, Any, Any, Any], stack.graph)
    share(app, Assistant(stack.services, graph))
    return app


@cache
def _app(max_file_bytes: int, max_body_bytes: int) -> FastAPI:
    """The app with these body limits, made once (making one takes tens of ms): of the
    settings, ``create_app`` reads only the limits, and :func:`fake_app` shares each
    test's services on it. Its lifespan, which would open real stores, is never run."""
    limits = {"max_file_bytes": max_file_bytes, "max_body_bytes": max_body_bytes}
    return create_app(_default_settings().model_copy(update=limits))


def client(app: FastAPI) -> httpx.AsyncClient:
    """An HTTP client of ``app``, in-process."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
