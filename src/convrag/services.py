"""The composition root: where every dependency enters.

:func:`open_services` starts the embedded PostgreSQL and Milvus Lite when no URL is set,
connects to them, runs the idempotent setups, and closes everything it opened, in
reverse order, when its block ends. The result is passed explicitly: the graph reads it
from each run's ``Context.services``; the HTTP app, the CLI, the Python API, the
evaluation harness and the benchmarks each open it once. Nothing here is global.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

from convrag.answering.injection_model import injection_model
from convrag.config import Settings
from convrag.embeddings import (
    LOCAL_MODEL,
    BatchingEmbedder,
    BulkEmbedder,
    Embedder,
    ProcessEmbedder,
    RememberingEmbedder,
    ThreadEmbedder,
    get_embedder,
)
from convrag.rerank import HttpReranker, endpoint
from convrag.retrieval.calibration import NullScales
from convrag.retrieval.policy import RetrievalPolicy, default_policy, load_policy
from convrag.retrieval.search import HybridSearcher
from convrag.stores.base import SETUP_LOCK
from convrag.stores.database import Database
from convrag.stores.embedded import EmbeddedPostgres, ManagedMilvusLite
from convrag.stores.vectors import VectorIndex
from convrag.web import WebSearch

log = logging.getLogger(__name__)


@dataclass
class Services:
    """The long-lived objects of one process."""

    settings: Settings
    db: Database
    index: VectorIndex
    embedder: Embedder
    searcher: HybridSearcher
    database_url: str
    milvus_uri: str
    bulk: BulkEmbedder
    """Embeds ingest batches without slowing the chat's query embeddings."""
    web: WebSearch | None = None
    reranker: HttpReranker | None = None
    policy: RetrievalPolicy = field(default_factory=default_policy)
    """The retrieval wing's fitted numbers: the file ``RETRIEVAL_POLICY`` names, else the
    packaged one."""
    sentences: RememberingEmbedder = field(init=False, repr=False, compare=False)
    """The embedder that weighs sentences against a question (the "not found" evidence
    and the no-LLM answer), remembering recent rows; rebuilt from ``embedder``."""
    nulls: NullScales = field(init=False, repr=False, compare=False)
    """Each workspace's null: what unrelated questions score on it (the scale the "not
    found" model reads cosines on)."""
    #: Reload in-process search engines right after an ingest (long-lived processes).
    warm_after_ingest: bool = False
    background: set[asyncio.Task[None]] = field(default_factory=set)
    ingests: dict[asyncio.Task[None], str] = field(default_factory=dict)
    """The background tasks that ingest uploads, each with its file's name, for the
    shutdown's log."""
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the process shuts down: long background work (an upload's ingest) stops
    at its next batch boundary instead of holding the shutdown up."""

    def __post_init__(self) -> None:
        self.sentences = RememberingEmbedder(self.embedder)
        self.nulls = NullScales(self.searcher)

    def spawn(self, coro: Coroutine[Any, Any, None], *, ingest_of: str | None = None) -> None:
        """Run work off the hot path, keeping a reference so it is not collected.
        ``ingest_of`` names the file that the work ingests, if it is an ingest."""
        task = asyncio.get_running_loop().create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        if ingest_of is not None:
            self.ingests[task] = ingest_of
            task.add_done_callback(self._forget_ingest)

    def _forget_ingest(self, task: asyncio.Task[None]) -> None:
        self.ingests.pop(task, None)

    async def drain(self) -> None:
        """Finish background work now (tests and shutdown)."""
        while self.background:
            await asyncio.gather(*list(self.background), return_exceptions=True)

    async def stop(self) -> None:
        """At shutdown: ask background work to stop at its next boundary and wait for it
        up to :data:`STOP_WAIT_S`, then stop what is still running where it is, and
        :meth:`drain`.

        An ingest stops at its next batch boundary, once its child process has finished
        the batch in hand: seconds that the log names, since nothing else says why a
        shutdown waits. Stopped at a boundary or, past the wait, in the middle of a
        batch, an upload's ingest resumes at the next start (a batch's stores are
        written in an order that a rerun converges from, see
        :func:`~convrag.ingest.ingest_documents`)."""
        self.stopping.set()
        if self.ingests:
            log.info(
                "shutting down: waiting for the ingest of %s to finish its batch (up to %g s; "
                "it resumes at the next start)",
                ", ".join(sorted(self.ingests.values())),
                STOP_WAIT_S,
            )
        if self.background:
            _, running = await asyncio.wait(set(self.background), timeout=STOP_WAIT_S)
            late = sorted(self.ingests[t] for t in running if t in self.ingests)
            if late:
                log.warning(
                    "shutting down: the ingest of %s did not finish its batch in %g s; stopped "
                    "in the middle of it (the ingest process completes the batch in hand "
                    "before it exits)",
                    ", ".join(late),
                    STOP_WAIT_S,
                )
            for task in running:
                task.cancel()
        await self.drain()


STOP_WAIT_S = 5.0
"""How long a shutdown waits for background work to stop at its next boundary: an
ingest's, once its child process has finished the batch in hand (a slice of 64 chunks
takes a second or two on two cores, but several ingests' batches queue for the one
child, and chunking a large file is one longer batch). Those still queued then are
dropped; the one in hand is still finished before the process exits."""


INGEST_PIDS = "ingest-pids"
"""The data directory's folder where each process records its ingest child's pid, for a
start after a crash to stop the child the crashed process left (``convrag.children``)."""


def keyword_engine_for(settings: Settings, index: VectorIndex) -> Literal["bm25s", "milvus"]:
    """``KEYWORD_ENGINE``; 'auto' is Milvus's BM25 on a server whose collection has it
    (after :meth:`VectorIndex.setup`), else bm25s in process."""
    if settings.keyword_engine != "auto":
        return settings.keyword_engine
    return "milvus" if index.bm25 and not index.is_lite else "bm25s"


def dense_engine_for(settings: Settings, *, is_lite: bool) -> Literal["numpy", "milvus"]:
    if settings.dense_engine != "auto":
        return settings.dense_engine
    return "numpy" if is_lite else "milvus"


@asynccontextmanager
async def open_services(
    settings: Settings, *, say: Callable[[str], None] | None = None
) -> AsyncIterator[Services]:
    """Start/connect every store that ``settings`` name and yield the services; close
    them all on exit. The settings are the caller's (a composition root: the CLI, the
    server, ``langgraph dev``'s graph factory), never read here. ``say`` is told each
    step that may take seconds as it begins (a command shows what it waits for).

    The embedding model and the fitted injection model load in threads from the start,
    while the servers start, not at the first turn."""
    from convrag.llm import check_llm_model

    tell = say or (lambda _: None)
    check_llm_model(settings)  # before any store starts: every turn would need it
    policy = load_policy(settings.retrieval_policy)  # the same: a bad file fails now
    await asyncio.to_thread(settings.data_dir.mkdir, parents=True, exist_ok=True)
    loop = asyncio.get_running_loop()
    model = loop.run_in_executor(None, get_embedder, settings)
    checks = loop.run_in_executor(None, injection_model)
    # Left to finish on their own when a server fails to start: they hold nothing to close.
    model.add_done_callback(_consumed)
    checks.add_done_callback(_consumed)
    async with AsyncExitStack() as stack:
        if settings.database_url is not None:
            db_url = settings.database_url.get_secret_value()
        else:
            tell(f"starting the embedded database (PostgreSQL in {settings.data_dir / 'pg'}) ...")
            db_url = await stack.enter_async_context(EmbeddedPostgres.running(settings.data_dir))
        is_lite = settings.is_milvus_lite
        if settings.milvus_uri is not None:
            milvus_uri = settings.milvus_uri
        else:
            tell(f"starting the vector index (Milvus Lite in {settings.data_dir / 'milvus'}) ...")
            milvus_uri = await stack.enter_async_context(
                ManagedMilvusLite.running(settings.data_dir)
            )
        db = await stack.enter_async_context(
            Database.from_url(
                db_url,
                statement_timeout_s=settings.database_statement_timeout_s,
                lock_timeout_s=settings.database_lock_timeout_s,
            )
        )
        if not model.done():
            tell(f"loading the embedding model ({settings.embedding_model}) ...")
        embedder = await model
        await checks
        token = settings.milvus_token.get_secret_value() if settings.milvus_token else None
        index = await stack.enter_async_context(
            VectorIndex.open(
                milvus_uri,
                settings.milvus_collection,
                embedder.dim,
                token=token,
                is_lite=is_lite,
                consistency=settings.effective_milvus_consistency,
            )
        )
        # Workers starting together on a fresh store would all create the checkpoint
        # tables and the collection (all but the first creation fail): one at a time.
        async with db.exclusive(SETUP_LOCK):
            await db.setup()
            await _keep_originals_shared(db, settings)
            await asyncio.to_thread(
                partial(index.setup, bm25_required=settings.keyword_engine == "milvus")
            )
        searcher = HybridSearcher(
            db,
            index,
            BatchingEmbedder(embedder),
            keyword_engine=keyword_engine_for(settings, index),
            dense_engine=dense_engine_for(settings, is_lite=is_lite),
            policy=policy,
        )
        web, bulk, reranker = await _optional_services(stack, settings, embedder)
        services = Services(
            settings, db, index, embedder, searcher, db_url, milvus_uri, bulk, web, reranker, policy
        )
        stack.push_async_callback(services.stop)
        yield services


async def _keep_originals_shared(db: Database, settings: Settings) -> None:
    """Move into the shared store the uploads an older version kept in this data
    directory, and delete the originals that no document names any more."""
    moved = await db.originals.adopt_files(settings.data_dir / "uploads")
    if moved:
        log.info("moved %d uploaded originals from %s into the database", moved, settings.data_dir)
    await db.originals.prune_unused()


async def _optional_services(
    stack: AsyncExitStack, settings: Settings, embedder: Embedder
) -> tuple[WebSearch | None, BulkEmbedder, HttpReranker | None]:
    """The web search, the ingest's embedder and the reranker that ``settings`` name,
    each closed with ``stack``."""
    web = None
    if settings.serper_api_key is not None and settings.serper_api_key.get_secret_value():
        web = await stack.enter_async_context(
            WebSearch.open(
                settings.serper_api_key.get_secret_value(), base_url=settings.serper_base_url
            )
        )
    bulk: BulkEmbedder = ThreadEmbedder(embedder)
    if settings.embedding_model == LOCAL_MODEL and settings.ingest_embedding == "process":
        bulk = await stack.enter_async_context(
            ProcessEmbedder.open(
                settings.embedding_model,
                settings.embedding_batch_size,
                threads=settings.effective_ingest_threads,
                niceness=settings.ingest_nice,
                pid_dir=settings.data_dir / INGEST_PIDS,
            )
        )
    reranker = None
    rerank_url = endpoint(settings.reranker)
    if rerank_url is not None:
        key = settings.reranker_api_key
        reranker = await stack.enter_async_context(
            HttpReranker.open(rerank_url, api_key=key.get_secret_value() if key else None)
        )
    return web, bulk, reranker


def _consumed(future: asyncio.Future[Any]) -> None:
    """Take a background step's outcome, so that a failure nobody awaited (the servers
    failed first) is not logged as never retrieved."""
    if not future.cancelled():
        future.exception()


@contextmanager
def shared_stores(settings: Settings) -> Iterator[dict[str, str]]:
    """Start, in this process, the embedded servers that no URL replaces, and yield the
    environment that points other processes at them (``DATABASE_URL``, ``MILVUS_URI`` and
    ``MILVUS_LITE``); empty when both URLs are set. The servers stop when the block ends.

    ``serve --workers N`` runs its workers with this environment: the workers then own
    no server and connect exactly as replicas connect to a PostgreSQL and Milvus server.
    """
    with ExitStack() as stack:
        env: dict[str, str] = {}
        if settings.database_url is None:
            env["DATABASE_URL"] = stack.enter_context(EmbeddedPostgres.held(settings.data_dir))
        if settings.milvus_uri is None:
            env["MILVUS_URI"] = stack.enter_context(ManagedMilvusLite.held(settings.data_dir))
            env["MILVUS_LITE"] = "true"
        yield env


def install_sigterm_handler() -> None:
    """Turn SIGTERM into SystemExit so atexit handlers stop the embedded servers.

    pgserver's own cleanup runs at exit; a process killed without it leaves a stale
    holder behind and the postmaster never stops.
    """
    try:
        current = signal.getsignal(signal.SIGTERM)
        if current in (signal.SIG_DFL, None):
            signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    except ValueError:  # not the main thread
        pass
