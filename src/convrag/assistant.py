"""The Python API: open the stack, compile the graph with its checkpointer, ask questions.

async with open_assistant() as bot:
    conv = await bot.new_conversation("acme")
    state = await bot.ask("What is Prasad Chaudhari's salary?", conv, workspace_id="acme")

Every run gets the assistant's own services through its ``Context``, so two assistants
in one process never use each other's stores.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph

from convrag.config import Settings, get_settings
from convrag.context import Context
from convrag.graph import compile_graph
from convrag.ids import DEFAULT_WORKSPACE, check_id, conversation_uuid
from convrag.records import Citation
from convrag.services import Services, open_services
from convrag.state import Classification, InputState, RewriteMethod, State
from convrag.stores.records import TurnRecord

log = logging.getLogger(__name__)

Durability = Literal["exit", "async", "sync"]
DEFAULT_DURABILITY: Durability = "exit"
"""Turns run with ``durability="exit"``: LangGraph writes one checkpoint when the run
ends, including when a node raises, so a run that crashed inside ``synthesize`` resumes
from there (``ainvoke(None, config)``) and ``persist``, keyed by the turn id fixed in
``load_history``, never writes the turn twice. ``"async"`` writes one checkpoint per
superstep and only adds protection against a killed process, which a client retry
covers."""


#: How long, and how often, marking a failed turn is tried again when the database did
#: not take it (a turn that failed because the database was down).
FAIL_AGAIN_FOR_S = 300.0
FAIL_AGAIN_EVERY_S = 1.0

#: Those tries under way (a reference keeps each task alive).
_FAILING_LATER: set[asyncio.Task[None]] = set()


@dataclass
class Assistant:
    """The compiled graph bound to this process's services."""

    services: Services
    graph: CompiledStateGraph[State, Context, InputState, State]
    durability: Durability = DEFAULT_DURABILITY

    def context(self, workspace_id: str, context: Context | None = None) -> Context:
        """The run's context: the caller's knobs, else the defaults with the environment's
        time limits (``LLM_TIMEOUT_S``...), with this assistant's services.

        ``workspace_id`` sets the workspace of a caller's context that names none (its
        default); a context naming another workspace is refused rather than silently
        run there."""
        if context is None:
            context = Context(workspace_id=workspace_id, **self.services.settings.time_limits)
        elif workspace_id != DEFAULT_WORKSPACE and context.workspace_id != workspace_id:
            if context.workspace_id != DEFAULT_WORKSPACE:
                raise ValueError(
                    f"workspace_id {workspace_id!r} and the context's workspace "
                    f"{context.workspace_id!r} differ; pass one of them"
                )
            context = replace(context, workspace_id=workspace_id)
        return replace(context, services=self.services)

    async def new_conversation(self, workspace_id: str) -> str:
        """A new conversation of ``workspace_id``; its id, for :meth:`ask` and :meth:`stream`.
        A workspace id that a run would refuse is refused here (``ValueError``)."""
        check_id(workspace_id)
        return await self.services.db.conversations.create_conversation(workspace_id)

    @staticmethod
    def config(conversation_id: str) -> RunnableConfig:
        """Only ``thread_id`` travels in ``configurable``; everything else is Context."""
        return {"configurable": {"thread_id": conversation_id}}

    async def ask(
        self,
        message: str,
        conversation_id: str,
        *,
        workspace_id: str = "default",
        context: Context | None = None,
        turn_id: str | None = None,
    ) -> State:
        """Answer one turn and return the final state.

        The turn is stored from its start; should the run fail, it is marked ``failed``
        with a short reason (the question stays) and the error is raised. A run that
        fails after ``persist`` stored its answer (the checkpoint written as the run
        ends, say) is answered: the turn read back from the store
        (:meth:`answered_anyway`, :func:`stored_state`), with a warning in the log.
        ``turn_id`` (a UUID) answers a turn that failed before again under the same id.
        """
        ctx = self.context(workspace_id, context)
        turn_id = turn_id or str(uuid.uuid4())
        payload = InputState(
            message=message, conversation_id=conversation_id, turn_request={"turn_id": turn_id}
        )
        try:
            result = await self.graph.ainvoke(
                payload, self.config(conversation_id), context=ctx, durability=self.durability
            )
        except BaseException as exc:  # a cancelled run too: its turn must not stay busy
            if isinstance(exc, Exception):
                stored = await self.answered_anyway(ctx.workspace_id, conversation_id, turn_id, exc)
                if stored is not None:
                    await self.settle_quietly(conversation_id)
                    turn, citations = stored
                    return stored_state(
                        turn,
                        citations,
                        workspace_id=ctx.workspace_id,
                        conversation_id=conversation_uuid(conversation_id),
                    )
            await asyncio.shield(self.fail_turn(ctx.workspace_id, turn_id, exc))
            raise
        await self.settle(conversation_id)
        return cast(State, result)

    async def answered_anyway(
        self, workspace_id: str, conversation_id: str, turn_id: str, exc: Exception
    ) -> tuple[TurnRecord, list[Citation]] | None:
        """Turn ``turn_id`` and its citations as stored, if its run raised ``exc`` after
        ``persist`` had committed it as ``done``: then only a write after it failed
        (LangGraph's checkpoint at the run's end, on a full disk or a database that
        blinked), and the turn stands as answered for the caller as it does in the store
        (the next turn reads its history from the stored turns, not from that
        checkpoint). Logs a warning naming what failed.

        None when the turn is not ``done``, cannot be read back either, or ``exc`` says
        the run never answered it: refused (another run's turn, a conversation being
        deleted, another workspace's, bad input), when a ``done`` row is someone else's
        answer. Every surface that answers a turn asks here: the Python API
        (:meth:`ask`, :meth:`stream`) and the HTTP service
        (:meth:`convrag.api.turns.TurnRunner.answered_anyway`)."""
        if _refused(exc) or conflicts(exc):
            return None
        db = self.services.db
        conversation_id = conversation_uuid(conversation_id)
        try:
            turn = await db.turns.get_turn(workspace_id, conversation_id, turn_id)
            if turn is None or turn.status != "done":
                return None
            citations = await db.transcripts.citations(workspace_id, turn.id) or []
        except Exception:
            log.warning("reading turn %s back after its run failed did not work", turn_id)
            return None
        log.warning(
            "turn %s is answered and stored, but a write after it failed: %s",
            turn_id,
            failure_reason(exc),
            exc_info=exc,
        )
        return turn, citations

    async def settle_quietly(self, conversation_id: str) -> None:
        """:meth:`settle`, best effort: the turn is answered and stored, and the next one
        prunes again (after a failed write, the store may still be failing)."""
        try:
            await self.settle(conversation_id)
        except Exception:
            log.warning("pruning the checkpoints of %s failed", conversation_id, exc_info=True)

    async def fail_turn(self, workspace_id: str, turn_id: str, exc: BaseException) -> None:
        """Log the failure (once, with its traceback) and mark the turn ``failed`` with
        :func:`failure_reason` of ``exc``, if this run had stored it (a conflict with
        another run's turn, or a conversation being deleted, leaves that one alone and is
        no failure). Best effort: when the
        database itself is down, the turn stays ``processing`` until restart recovery."""
        if conflicts(exc):
            return
        reason = failure_reason(exc)
        if _refused(exc):  # stopped by the caller, or the request's fault: no traceback
            log.info("turn %s refused or stopped: %s", turn_id, reason)
        else:
            log.error("turn %s failed: %s", turn_id, reason, exc_info=exc)
        try:
            await self.services.db.turns.fail_turn(workspace_id, turn_id, reason)
        except Exception:
            log.warning(
                "marking turn %s failed did not work; trying again for %.0f s",
                turn_id,
                FAIL_AGAIN_FOR_S,
                exc_info=True,
            )
            retry = asyncio.get_running_loop().create_task(
                self._fail_turn_later(workspace_id, turn_id, reason)
            )
            _FAILING_LATER.add(retry)
            retry.add_done_callback(_FAILING_LATER.discard)

    async def _fail_turn_later(self, workspace_id: str, turn_id: str, reason: str) -> None:
        """Mark the turn ``failed`` once the database answers again, trying every
        :data:`FAIL_AGAIN_EVERY_S` for :data:`FAIL_AGAIN_FOR_S`: left ``processing`` by a
        live process, it would hold its conversation busy (a 409 for each new message)
        for :data:`~convrag.stores.base.BUSY_FOR_S`."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + FAIL_AGAIN_FOR_S
        while loop.time() < give_up:
            await asyncio.sleep(FAIL_AGAIN_EVERY_S)
            try:
                await self.services.db.turns.fail_turn(workspace_id, turn_id, reason)
            except Exception:
                continue
            log.info("turn %s marked failed once the database answered again", turn_id)
            return

    async def settle(self, conversation_id: str) -> None:
        """After a finished turn: keep only the thread's latest checkpoint, so checkpoints
        do not grow with the conversation (one per thread at rest); or none
        (:meth:`forget_if_departing`) when the conversation was deleted meanwhile."""
        if not await self.forget_if_departing(conversation_id):
            await self.services.db.prune_checkpoints(conversation_id)

    async def forget_if_departing(self, thread_id: str) -> bool:
        """Delete the checkpoints of thread ``thread_id`` and of its conversation when
        that conversation is gone or its delete is under way (in any process); whether
        it did. A run ending then (answered just before the delete began, or refused
        because of it) writes its last checkpoint after that delete may have cleared
        the thread, and nothing would ever delete it."""
        db = self.services.db
        conversation_id = conversation_uuid(thread_id)
        if not await db.conversations.departing_conversations([conversation_id]):
            return False
        await db.delete_checkpoints(conversation_id)
        if thread_id != conversation_id:
            await db.checkpoints.adelete_thread(thread_id)
        return True

    async def stream(
        self,
        message: str | None,
        conversation_id: str,
        *,
        workspace_id: str = "default",
        context: Context | None = None,
    ) -> AsyncIterator[tuple[str, Any]]:
        """(mode, chunk) pairs of ``custom`` events and node ``updates``.

        ``message=None`` resumes the thread's interrupted or crashed run. A stream that
        fails, or that the caller stops early (``aclose``, a cancelled task), marks its
        turn failed, as :meth:`ask` does, so the next message is not refused as busy. One
        that fails after ``persist`` stored the answer (:meth:`answered_anyway`) ends
        without raising, having yielded ``persist``'s update.
        """
        ctx = self.context(workspace_id, context)
        turn_id = str(uuid.uuid4())
        payload = (
            None
            if message is None
            else InputState(
                message=message,
                conversation_id=conversation_id,
                turn_request={"turn_id": turn_id},
            )
        )
        try:
            async for mode, chunk in self.graph.astream(
                payload,
                self.config(conversation_id),
                context=ctx,
                stream_mode=["custom", "updates"],
                durability=self.durability,
            ):
                yield mode, chunk
        except BaseException as exc:
            if payload is not None:
                if isinstance(exc, Exception) and await self.answered_anyway(
                    ctx.workspace_id, conversation_id, turn_id, exc
                ):
                    # persist's update is out already: the stream ends as a finished one.
                    await self.settle_quietly(conversation_id)
                    return
                await asyncio.shield(self.fail_turn(ctx.workspace_id, turn_id, exc))
            raise
        await self.settle(conversation_id)


STOPPED_TURN = "interrupted: the run was stopped before its answer"
"""The reason a turn whose run was cancelled or closed early is stored with."""


def stored_state(
    turn: TurnRecord, citations: list[Citation], *, workspace_id: str, conversation_id: str
) -> State:
    """The final state of an answered turn, as far as the store keeps it: what
    :meth:`Assistant.ask` returns for a run that failed after ``persist`` stored its
    answer (:meth:`Assistant.answered_anyway`). Each source's ``text`` is the snippet
    its citation kept (empty for one the answer did not cite); what only the run held
    (history, retrieval hits, drafts, the repetition verdict) is absent."""
    snippets = {c["source_index"]: c["snippet"] for c in citations}
    sources = [s.source(snippets.get(s.n, "")) for s in turn.sources]
    meta = turn.metadata
    state = State(
        message=turn.question,
        conversation_id=conversation_id,
        workspace_id=workspace_id,
        turn_id=turn.id,
        classification=cast(Classification, turn.intent or "standalone"),
        rewritten_query=turn.contextualized_query or turn.question,
        sources=sources,
        answer=turn.answer,
        citations=citations,
        entities=list(turn.entities_mentioned),
        regenerations=meta.regenerations,
        flags=turn.flags,
        errors=dict(meta.errors),
        timings=dict(meta.timings_ms),
        persisted=True,
    )
    if meta.rewrite_method:
        state["rewrite_method"] = cast(RewriteMethod, meta.rewrite_method)
    return state


def conflicts(exc: BaseException) -> bool:
    """Whether a run was refused for another run's sake: its turn id names another
    run's turn, its conversation answers another message or is being deleted. That
    turn, if any, is not this run's to mark or to answer with."""
    from convrag.errors import ConversationBusy, ConversationInUse, TurnConflict

    return isinstance(exc, (TurnConflict, ConversationBusy, ConversationInUse))


def _refused(exc: BaseException) -> bool:
    """Whether a turn ended on its caller (cancelled, or a stream closed early) or on its
    request (another workspace's conversation, bad input) rather than on the service:
    the caller knows, the log need not shout."""
    from convrag.embeddings import EmbeddingMismatch

    return (
        not isinstance(exc, Exception)
        or isinstance(exc, PermissionError)
        or (isinstance(exc, ValueError) and not isinstance(exc, EmbeddingMismatch))
    )


#: What a turn that failed for a full disk is told, and the log says: not an outage that
#: a restart cures, but one an operator must free space for.
OUT_OF_DISK = "the database is out of disk space"


def out_of_disk(exc: BaseException) -> bool:
    """Whether ``exc`` (or an error that caused it) is a full disk: PostgreSQL's
    ``DiskFull``, or an ``OSError`` with ``ENOSPC``."""
    from psycopg.errors import DiskFull

    seen: BaseException | None = exc
    for _ in range(5):  # the error itself and the few that caused it
        if seen is None:
            return False
        if isinstance(seen, DiskFull) or (isinstance(seen, OSError) and seen.errno == errno.ENOSPC):
            return True
        seen = seen.__cause__
    return False


def failure_reason(exc: BaseException) -> str:
    """The short reason a failed turn is stored with, and clients are told: a store's
    error by its kind (its message names internal hosts and ports, or quotes SQL),
    anything else by its type and message. Data the database refused (a NUL, a value out
    of range: ``psycopg.DataError``) is a fault in what the turn produced, not an outage,
    and is named as such; so is a full disk (:data:`OUT_OF_DISK`) and a run its caller
    stopped (:data:`STOPPED_TURN`)."""
    from psycopg import DataError
    from psycopg import Error as PostgresError
    from pymilvus import MilvusException

    if not isinstance(exc, Exception):  # cancelled, or the generator was closed
        return STOPPED_TURN
    if out_of_disk(exc):
        return OUT_OF_DISK
    if isinstance(exc, MilvusException):
        return "the vector index was unavailable"
    if isinstance(exc, DataError):
        return f"the database refused the turn's data ({type(exc).__name__})"
    if isinstance(exc, PostgresError):
        return "the database was unavailable"
    message = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


@asynccontextmanager
async def open_assistant(
    settings: Settings | None = None, *, services: Services | None = None
) -> AsyncIterator[Assistant]:
    """An :class:`Assistant` on ``services``, or on services opened (and closed) here
    with ``settings`` (the environment's when none are given: this is the Python API's
    composition root)."""
    async with AsyncExitStack() as stack:
        if services is None:
            services = await stack.enter_async_context(
                open_services(settings if settings is not None else get_settings())
            )
        yield Assistant(services, compile_graph(services.db.checkpoints, services=services))
