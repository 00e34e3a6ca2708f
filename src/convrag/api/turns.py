"""Runs one turn of the graph as a task and turns its stream into typed events.

Events, in order: ``rewrite``, ``sources`` (always before any token), ``token``*,
``citation`` (as a resolvable marker appears), ``repetition`` (a regeneration starts:
discard the tokens so far), ``reset`` (the LLM failed mid-answer: discard the tokens so
far), then ``done`` or ``error``.

Client disconnect policy: the turn runs to completion in its task and is persisted; a
client that went away reads it back with ``GET /v1/conversations/{id}``. A conversation
answers one message at a time: a second message meanwhile gets 409. Only an explicit
stop (:meth:`TurnRunner.stop`, ``POST /v1/conversations/{id}/stop``) ends a turn early:
it is stored ``failed`` (:data:`~convrag.assistant.STOPPED_TURN`) and its stream ends
with an ``error`` event of code ``stopped``; and a shutdown (below). A stop that reaches
another process than the one answering is passed on to it through the database
(:data:`STOP_CHANNEL`), so it answers alike in every worker.

Durable turns: the question is stored (``processing``) when the turn starts; a turn that
fails is marked ``failed`` here with a short reason. A message sent with an idempotency
key has a turn id derived from the key (:func:`turn_id_for`): a retry of an answered one
is answered from the store (:func:`stored_answer`), a retry of one still running in this
process waits for it (:meth:`TurnRunner.running`).

Shutdown: :meth:`TurnRunner.stop_all` stops the turns still running (the service calls
it shortly before its server would cut their streams): each stream ends with an
``error`` event whose code is ``shutting_down``, a JSON reply is a 503, and the turn is
stored as ``failed`` with :data:`~convrag.assistant.STOPPED_TURN`.

Both routes that answer (``POST /v1/conversations/{id}/messages`` and
``POST /v1/chat/completions``) start turns here and build their JSON reply with
:func:`answer_out`, so the two give the same answer in the same shape.

This module is the run itself: the runner's books (one turn at a time per conversation),
starting, stopping and shutting down, and each turn's task. The stream it writes (the
events, :func:`drain`, the SSE response and its keep-alives) is
:mod:`convrag.api.turn_stream`; the replies it builds (the ``done`` event,
:func:`answer_out`, :func:`stored_answer`) are :mod:`convrag.api.turn_replies`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from fastapi import HTTPException

from convrag.api.errors import plain_reason, unavailable
from convrag.api.metrics import TURNS, observe_turn
from convrag.api.schemas import AnswerOut, RagOptions
from convrag.api.turn_replies import (
    TurnResult,
    done_event,
    failure_code,
    state_done,
    stored_answer,
)
from convrag.api.turn_stream import (
    Event,
    TurnEvents,
    error_event,
)
from convrag.assistant import STOPPED_TURN, Assistant, failure_reason
from convrag.context import Context
from convrag.errors import ANSWERING, BEING_DELETED, ConversationBusyHere, ConversationInUse
from convrag.events import GraphEvent
from convrag.services import Services
from convrag.state import InputState

log = logging.getLogger(__name__)

#: What a client whose turn a shutdown stopped is told (its ``error`` event, or the 503).
SHUTTING_DOWN = "the service is shutting down; ask again in a moment"

#: The PostgreSQL ``NOTIFY`` channel on which a process asks the others sharing the
#: database to stop a turn (:meth:`TurnRunner.stop_requested`).
STOP_CHANNEL = "convrag_stop"

#: How long a message (or a delete) waits for the run of the conversation's previous
#: turn to end once that turn's answer is stored, before it is refused as busy.
ANSWERED_WAIT_S = 5.0

#: How long a stop waits for another process to store the turn it was asked to stop.
STOP_WAIT_S = 10.0

#: How often a stop reads that turn back meanwhile.
STOP_POLL_S = 0.05

#: How often a stop asks again meanwhile: a notification is not stored, and one sent while
#: that process's listening connection was being opened again was never heard.
STOP_ASK_AGAIN_S = 1.0

#: What a stop is told when that process did not store the turn as ended in time (a 503).
NOT_STOPPED = (
    "the answer is being written by another worker, which did not stop it in time; retry the stop"
)

#: Turn ids of idempotency keys: uuid5 in this namespace of "workspace/conversation/key".
_TURN_KEY_NS = uuid.UUID("5b0c6f43-2d8e-4c51-9d0e-7a4f1e6b2c90")


def turn_id_for(workspace_id: str, conversation_id: str, key: str) -> str:
    """The turn id of a message sent with idempotency ``key``: the same for every retry
    of it, different in every other conversation (and workspace)."""
    return str(uuid.uuid5(_TURN_KEY_NS, f"{workspace_id}\x00{conversation_id}\x00{key}"))


def _key(workspace_id: str, conversation_id: str) -> str:
    """A conversation's key in :class:`TurnRunner`'s books: keyed by workspace too, so
    another workspace's message to the same id is never told it is busy (it gets the same
    404 as for any unknown id)."""
    return f"{workspace_id}/{conversation_id}"


@dataclass
class _Turn:
    """One turn's run, as :meth:`TurnRunner._run` and its helpers share it: what it
    answers, the events it writes, and what it produced so far."""

    conversation_id: str
    payload: InputState
    context: Context
    events: TurnEvents
    result: TurnResult = field(default_factory=TurnResult)

    @property
    def turn_id(self) -> str | None:
        """The turn's id (its row's), when it has one (``turn_request``)."""
        request = self.payload.get("turn_request")
        return request["turn_id"] if request else None


class TurnRunner:
    """Starts turns, one at a time per conversation."""

    def __init__(self, assistant: Assistant) -> None:
        self.assistant = assistant
        self.active: dict[str, asyncio.Task[TurnResult]] = {}
        self.turn_ids: dict[str, str] = {}
        """The turn id each active task answers, by the same key as ``active``."""
        self._settling: set[asyncio.Task[None]] = set()
        self._stopping: set[asyncio.Task[TurnResult]] = set()
        """Tasks :meth:`stop` cancelled: told apart from a shutdown's cancellation."""
        self.shutting_down = False
        """Set by :meth:`stop_all`: the service is shutting down."""
        self._stopper: asyncio.Task[None] | None = None
        self._deleting: set[str] = set()
        """Conversations being deleted (:meth:`deleting`), by the same key as ``active``."""
        self._answered: set[str] = set()
        """Conversations whose running turn has stored its answer (``persist`` is done),
        by the same key as ``active``."""
        self._asked: set[asyncio.Task[str | None]] = set()
        """Stops that other processes asked for (:meth:`stop_requested`), under way."""

    async def start(
        self, conversation_id: str, payload: InputState, context: Context
    ) -> tuple[asyncio.Queue[Event | None], asyncio.Task[TurnResult]]:
        """Run the turn in a task. Without a ``turn_request`` the turn gets a new id here,
        so that a failure can be recorded on its stored row. Once :meth:`stop_all` has
        run (shutdown), a 503 that the client may retry elsewhere or later."""
        key = _key(context.workspace_id, conversation_id)
        await self._finished(key)
        if self.shutting_down:
            raise unavailable(SHUTTING_DOWN)
        if key in self._deleting:
            raise ConversationBusyHere(BEING_DELETED)
        if key in self.active:
            raise ConversationBusyHere()
        request = payload.get("turn_request") or {"turn_id": str(uuid.uuid4())}
        payload = InputState(**{**payload, "turn_request": request})
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        task = asyncio.get_running_loop().create_task(
            self._run(conversation_id, payload, context, queue)
        )
        self.active[key] = task
        self.turn_ids[key] = request["turn_id"]

        def forget(_: object) -> None:
            if self.active.get(key) is task:
                self.active.pop(key, None)
                self.turn_ids.pop(key, None)
                self._answered.discard(key)

        task.add_done_callback(forget)
        return queue, task

    async def _finished(self, key: str) -> None:
        """Wait for the conversation's run in this process if its answer is stored
        already, up to :data:`ANSWERED_WAIT_S`: the run is only writing its checkpoint,
        and a client that has read the answer back (or its ``done`` event) may send the
        next message, or delete, at once. A run still answering is not waited for."""
        task = self.active.get(key)
        if task is not None and key in self._answered:
            await asyncio.wait({task}, timeout=ANSWERED_WAIT_S)

    @asynccontextmanager
    async def deleting(self, workspace_id: str, conversation_id: str) -> AsyncIterator[None]:
        """Hold the conversation for its delete in this process:
        :class:`~convrag.errors.ConversationBusyHere` now if this process is answering a
        message in it, until that run has ended (checkpoint included), or deletes it
        already; and for the block, a message to it is refused here without starting a
        run. The delete clears the vectors and checkpoints before the rows, so a turn
        started meanwhile would write them again and, once answered, bring the deleted
        conversation back. The other processes sharing the database are held by the
        delete's own mark there (:func:`convrag.conversations.delete_conversation`)."""
        key = _key(workspace_id, conversation_id)
        await self._finished(key)
        if key in self._deleting:
            raise ConversationBusyHere(BEING_DELETED)
        if key in self.active:
            raise ConversationBusyHere(ANSWERING)
        self._deleting.add(key)
        try:
            yield
        finally:
            self._deleting.discard(key)

    async def stop_all(self) -> None:
        """Stop every running turn at shutdown and wait until each is stored as stopped:
        its stream ends with an ``error`` event (``shutting_down``) instead of being cut,
        and the turn is ``failed`` now rather than at the next start. A message arriving
        afterwards gets a 503 (:meth:`start`)."""
        self.shutting_down = True
        running = list(self.active.values())
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)

    def stop_after(self, delay_s: float) -> None:
        """:meth:`stop_all` in ``delay_s`` seconds (once), unless the turns are done by
        then: the server is shutting down and gives open streams that long to end."""
        if self._stopper is None:
            self._stopper = asyncio.get_running_loop().create_task(self._stop_after(delay_s))

    async def _stop_after(self, delay_s: float) -> None:
        await asyncio.sleep(delay_s)
        if self.active:
            log.warning("stopping %d turns still running at shutdown", len(self.active))
        await self.stop_all()

    async def close(self) -> None:
        """Cancel a pending :meth:`stop_after` (the server has stopped)."""
        if self._stopper is not None:
            self._stopper.cancel()
            await asyncio.gather(self._stopper, return_exceptions=True)

    def running(
        self, workspace_id: str, conversation_id: str, turn_id: str
    ) -> asyncio.Task[TurnResult] | None:
        """The task answering ``turn_id`` in this process, if it is still running."""
        key = _key(workspace_id, conversation_id)
        if self.turn_ids.get(key) != turn_id:
            return None
        return self.active.get(key)

    async def stop(self, workspace_id: str, conversation_id: str) -> str | None:
        """Stop the turn being answered in the conversation, by this process or by
        another one sharing the database (:meth:`_stop_elsewhere`), and return its id
        once it is stored ``failed`` (:data:`~convrag.assistant.STOPPED_TURN`), so the
        conversation takes the next message at once; None when none is being answered
        (or it ended meanwhile, or its answer is stored: the run is only writing its
        checkpoint, and stopping it would report a stored answer as stopped)."""
        key = _key(workspace_id, conversation_id)
        task = self.active.get(key)
        if task is None or task.done():
            return await self._stop_elsewhere(workspace_id, conversation_id)
        if key in self._answered:
            await self._finished(key)
            return None
        return await self._stop_here(task, self.turn_ids[key])

    async def _stop_elsewhere(self, workspace_id: str, conversation_id: str) -> str | None:
        """Stop the conversation's turn that another live process is answering: ask it on
        :data:`STOP_CHANNEL` (each process's listener hands the request to its runner's
        :meth:`stop_requested`), again every :data:`STOP_ASK_AGAIN_S`, until the turn is
        stored as it ended. None when no other process answers one there. A 503 when the
        turn is still being answered after :data:`STOP_WAIT_S` (that process did not hear,
        or did not stop in time): a retry asks again."""
        db = self.assistant.services.db
        turn_id = await db.turns.turn_answered_elsewhere(workspace_id, conversation_id)
        if turn_id is None:
            return None
        asked = {"workspace_id": workspace_id, "conversation_id": conversation_id}
        request = json.dumps({**asked, "turn_id": turn_id})
        loop = asyncio.get_running_loop()
        give_up = loop.time() + STOP_WAIT_S
        ask_at = loop.time()
        while (turn := await db.turns.get_turn(workspace_id, conversation_id, turn_id)) is not None:
            if turn.status != "processing":
                return turn_id if turn.error == STOPPED_TURN else None
            if loop.time() >= give_up:
                raise unavailable(NOT_STOPPED)
            if loop.time() >= ask_at:
                await db.workspaces.notify(STOP_CHANNEL, request)
                ask_at = loop.time() + STOP_ASK_AGAIN_S
            await asyncio.sleep(STOP_POLL_S)
        return None  # the conversation was deleted meanwhile

    def stop_requested(self, payload: str) -> None:
        """Another process asked on :data:`STOP_CHANNEL` to stop a turn (``payload``:
        its workspace, conversation and turn id, as JSON): stop it if this process
        answers it (in a task of its own; the asking process waits for the stored
        result, not for a reply)."""
        try:
            asked = json.loads(payload)
            key, turn_id = _key(asked["workspace_id"], asked["conversation_id"]), asked["turn_id"]
        except (ValueError, TypeError, KeyError):
            log.warning("ignoring a stop request that is not one: %.200r", payload)
            return
        task = self.active.get(key)
        if (
            task is None
            or task.done()
            or self.turn_ids.get(key) != turn_id
            or key in self._answered
        ):
            return
        stopping = asyncio.get_running_loop().create_task(self._stop_here(task, turn_id))
        self._asked.add(stopping)
        stopping.add_done_callback(self._asked.discard)

    async def _stop_here(self, task: asyncio.Task[TurnResult], turn_id: str) -> str | None:
        """Stop this process's ``task``, which answers ``turn_id``; its id once it is
        stored as stopped, None when it ended otherwise meanwhile. A task already being
        stopped is not cancelled again (a second Stop, or a request asked again): that
        would cut short its own handling, which stores the turn as stopped."""
        if task not in self._stopping:
            self._stopping.add(task)
            task.cancel()
        try:
            await asyncio.wait({task})
        finally:
            self._stopping.discard(task)
        if task.cancelled():  # cancelled outside the run's own handling
            return None
        error = task.result().error
        return turn_id if error is not None and error["code"] == "stopped" else None

    async def _run(
        self,
        conversation_id: str,
        payload: InputState,
        context: Context,
        queue: asyncio.Queue[Event | None],
    ) -> TurnResult:
        """The turn's task: stream the graph's run as events on ``queue``, ended by
        ``done`` or ``error`` and then ``None``; a failure is stored on the turn here
        (:meth:`_stopped`, :meth:`_failed`), never a broken stream."""
        started = time.perf_counter()
        turn = _Turn(conversation_id, payload, context, TurnEvents(queue))
        result = turn.result
        try:
            await self._stream(turn)
            observe_turn(result.state, time.perf_counter() - started)
            turn.events.put(state_done(result.state))
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            stopped = task in self._stopping
            if not stopped and not self.shutting_down:  # cancelled by whoever awaits it
                raise
            if task is not None:
                task.uncancel()
            await self._stopped(turn, exc, stopped=stopped)
        except Exception as exc:  # reported as an `error` event, never a broken stream
            await self._failed(turn, exc)
        finally:
            result.sources = turn.events.sources
            turn.events.end()
        if result.error is None:
            self._settle_later(conversation_id)
        return result

    async def _stream(self, turn: _Turn) -> None:
        """Run the graph: its custom stream becomes the turn's events, its last state
        ``result.state``; ``persist``'s update marks the conversation answered in the
        books (:meth:`_finished`)."""
        async for mode, chunk in self.assistant.graph.astream(
            turn.payload,
            self.assistant.config(turn.conversation_id),
            context=self.assistant.context(turn.context.workspace_id, turn.context),
            # "updates": persist's own update arrives as it ends; the last "values"
            # only after the run has written its checkpoint.
            stream_mode=["custom", "values", "updates"],
            durability=self.assistant.durability,
        ):
            if mode == "values":
                turn.result.state = cast(dict[str, Any], chunk)
            elif mode == "updates":
                if "persist" in cast(dict[str, Any], chunk):
                    self._answered.add(_key(turn.context.workspace_id, turn.conversation_id))
            else:
                turn.events.custom(cast(GraphEvent, chunk))

    async def _stopped(self, turn: _Turn, exc: asyncio.CancelledError, *, stopped: bool) -> None:
        """End a run that :meth:`stop` (``stopped``) or a shutdown (:meth:`stop_all`)
        cancelled: its ``error`` event, and the turn stored ``failed``."""
        if stopped:
            TURNS.labels("stopped").inc()
            # Stored failed before the stream says so: a client that reads `stopped`
            # finds the conversation free for its next message.
            await self._store_failed(turn, exc)
            turn.result.error = error_event("stopped", STOPPED_TURN)
            turn.events.put(turn.result.error)
        else:
            # Shutting down: the stream is told first, before the server cuts it;
            # marking the turn failed is a database write.
            TURNS.labels("error").inc()
            turn.result.error = error_event("shutting_down", SHUTTING_DOWN)
            turn.events.put(turn.result.error)
            await self._store_failed(turn, exc)

    async def _failed(self, turn: _Turn, exc: Exception) -> None:
        """End a run that raised ``exc``: ``done`` when its answer was stored anyway
        (:meth:`answered_anyway`), else its ``error`` event (:func:`failure_code`), and
        the turn stored ``failed`` with why."""
        code = failure_code(exc)
        result = turn.result
        if code == "not_found" or isinstance(exc, ConversationInUse):
            await self._forget_refused_run(turn.conversation_id)
        if code == "turn_failed" and turn.turn_id is not None:
            result.stored = await self.answered_anyway(
                turn.context.workspace_id, turn.conversation_id, turn.turn_id, exc
            )
        if result.stored is not None:
            TURNS.labels("ok").inc()
            turn.events.put(done_event(result.stored))
            return
        if code == "turn_failed":
            # A message refused before its turn started (404, 409, 422) is no turn:
            # convrag_http_errors_total counts it under its status.
            TURNS.labels("error").inc()
        # A failed turn is told by its short reason: the exception's own text can quote
        # SQL, hosts or a provider's reply.
        message = failure_reason(exc) if code == "turn_failed" else str(exc)
        result.error = error_event(code, message)
        result.unavailable = plain_reason(exc)
        await self._store_failed(turn, exc)  # the question stays stored, `failed` with why
        turn.events.put(result.error)

    async def _store_failed(self, turn: _Turn, exc: BaseException) -> None:
        """Mark the turn ``failed`` because of ``exc``, when it has an id
        (:meth:`~convrag.assistant.Assistant.fail_turn`)."""
        if turn.turn_id is not None:
            await self.assistant.fail_turn(turn.context.workspace_id, turn.turn_id, exc)

    def _settle_later(self, conversation_id: str) -> None:
        """Settle the conversation after its answered turn, off the turn's task: the
        conversation takes its next message at once."""
        settling = asyncio.get_running_loop().create_task(
            self.assistant.settle_quietly(conversation_id)
        )
        self._settling.add(settling)
        settling.add_done_callback(self._settling.discard)

    async def _forget_refused_run(self, conversation_id: str) -> None:
        """After a run refused because its conversation is gone (deleted since the route
        found it) or being deleted (by any process): delete the checkpoint LangGraph
        wrote as the run ended on the error, which holds the message and which no later
        delete would find. Only when the conversation exists in no workspace, or its
        delete is under way: then its thread is nobody's
        (:meth:`~convrag.assistant.Assistant.forget_if_departing`)."""
        try:
            await self.assistant.forget_if_departing(conversation_id)
        except Exception:
            log.warning(
                "deleting the checkpoints of the refused run of %s failed",
                conversation_id,
                exc_info=True,
            )

    async def answered_anyway(
        self, workspace_id: str, conversation_id: str, turn_id: str, exc: Exception
    ) -> AnswerOut | None:
        """The stored reply of turn ``turn_id`` if its run raised ``exc`` after ``persist``
        had committed it as ``done`` (:meth:`~convrag.assistant.Assistant.answered_anyway`,
        which the Python API's ``ask`` asks too): the turn stands as answered for the
        client as it does in the store. None when it does not."""
        stored = await self.assistant.answered_anyway(workspace_id, conversation_id, turn_id, exc)
        if stored is None:
            return None
        turn, citations = stored
        return stored_answer(conversation_id, turn, citations)


def turn_context(
    workspace: str, rag: RagOptions, services: Services, *, create_conversation: bool = True
) -> Context:
    """The run's context from a request's ``rag`` options and the server's time limits;
    422 for web search asked of a server that has no Serper key (it would silently not
    search)."""
    if rag.web_search == "on" and services.web is None:
        raise HTTPException(
            422,
            "rag.web_search: 'on' needs web search, which this server does not have; "
            "set SERPER_API_KEY on the server, or use 'auto' or 'off'",
        )
    return Context(
        workspace_id=workspace,
        rag_enabled=rag.enabled,
        top_k=rag.top_k,
        score_threshold=rag.threshold,
        web_search=rag.web_search,
        create_conversation=create_conversation,
        **services.settings.time_limits,
    )
