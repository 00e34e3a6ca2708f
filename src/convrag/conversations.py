"""Conversation lifecycle actions that span several stores.

A conversation lives in two places: its rows in Postgres (the conversation, its turns
and their citations) and its checkpoint thread in the graph's checkpointer; a
conversation answered before conversation memory was removed may also have ``memory``
vectors in Milvus (one per turn), which nothing reads. Deleting one must clear them all,
in one place that the HTTP service, the CLI and library callers share, so none of them
reaches into a store or the checkpointer to do it.

With ``CONVERSATION_TTL_DAYS`` set, :func:`sweep_expired` deletes the conversations whose
last activity is older than that through the same action, and the HTTP service runs it
at start and then every :data:`SWEEP_INTERVAL` (:func:`sweep_periodically`).
"""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import TYPE_CHECKING

from convrag.errors import ConversationInUse

if TYPE_CHECKING:
    from convrag.assistant import Assistant

log = logging.getLogger(__name__)

SWEEP_INTERVAL = timedelta(hours=1)
"""How often a running service looks for expired conversations."""

SWEEP_BATCH = 100
"""Expired conversations listed per query: a backlog is deleted in bounded batches."""


async def delete_conversation(
    assistant: Assistant, workspace_id: str, conversation_id: str
) -> bool:
    """Delete a conversation's checkpoints, turns and citations, and any legacy memory
    vectors it has in Milvus.

    Returns False, touching nothing, when the conversation is not this workspace's:
    checkpoint threads are keyed by the thread id alone, so Postgres, which knows the
    owner, is asked first. Its checkpoints are those of its own id and of every other
    thread id it was answered under (``"my-chat"``, whose UUID5 it is), which Postgres
    recorded. The Postgres rows go last: if Milvus or the checkpointer fails, the
    conversation is still listed and a retried DELETE finishes the job, instead of
    leaving vectors or checkpoints no row points to. Nothing writes a conversation's
    vectors any more; the delete in Milvus (one filtered delete, of nothing for a
    conversation answered since) clears those that earlier versions wrote for each turn
    (``kind = "memory"``), which hold its text.

    Several processes may share the database, so the delete first marks the
    conversation in it (:meth:`~convrag.stores.conversations.ConversationStore.mark_deleting`):
    :class:`~convrag.errors.ConversationInUse` when any of them is
    answering a message in it, or deleting it already; and from then on, no turn starts
    in it anywhere, which would write checkpoints again after they were
    cleared and, once answered, bring the conversation back. A delete that fails midway
    takes its mark back.
    """
    services = assistant.services
    if not await services.db.conversations.mark_deleting(workspace_id, conversation_id):
        return False
    try:
        await asyncio.to_thread(services.index.delete_conversation, workspace_id, conversation_id)
        await services.db.delete_checkpoints(conversation_id)
        return await services.db.conversations.delete_conversation(workspace_id, conversation_id)
    except BaseException:
        await asyncio.shield(_unmark(assistant, workspace_id, conversation_id))
        raise


async def _unmark(assistant: Assistant, workspace_id: str, conversation_id: str) -> None:
    """Take back a failed delete's mark; when that fails too (the database is down), the
    mark stops counting by itself (with this process, or after its time)."""
    try:
        await assistant.services.db.conversations.unmark_deleting(workspace_id, conversation_id)
    except Exception:
        log.warning("clearing the delete mark of %s failed", conversation_id, exc_info=True)


async def sweep_expired(
    assistant: Assistant, ttl_days: float | None = None, *, batch: int = SWEEP_BATCH
) -> int:
    """Delete every conversation inactive for longer than ``ttl_days`` (by default the
    settings' ``CONVERSATION_TTL_DAYS``), in all workspaces; returns how many were deleted.

    None or 0 keeps every conversation and touches nothing. Each conversation goes
    through :func:`delete_conversation`, so a store failing midway leaves it listed and
    the next sweep finishes it; that failure also ends this sweep (and is raised), since
    the same conversations would be listed again. One that is answering a message after
    all, or that another process is deleting, is skipped.
    """
    if ttl_days is None:
        ttl_days = assistant.services.settings.conversation_ttl_days
    if not ttl_days:
        return 0
    older_than = timedelta(days=ttl_days)
    deleted = 0
    try:
        while True:
            expired = await assistant.services.db.conversations.expired_conversations(
                older_than, limit=batch
            )
            skipped = 0
            for workspace_id, conversation_id in expired:
                try:
                    deleted += await delete_conversation(assistant, workspace_id, conversation_id)
                except ConversationInUse as busy:
                    skipped += 1
                    log.info("not deleting expired conversation %s: %s", conversation_id, busy)
            if len(expired) < batch or skipped == len(expired):
                break
    finally:
        log.log(
            logging.INFO if deleted else logging.DEBUG,
            "deleted %d conversations inactive for more than %g days",
            deleted,
            ttl_days,
        )
    return deleted


async def sweep_periodically(assistant: Assistant, interval: timedelta = SWEEP_INTERVAL) -> None:
    """Run :func:`sweep_expired` now and then every ``interval``, until cancelled.

    A failed sweep is logged and retried at the next interval, so a store that is down
    for a while does not stop retention. Cancelling (at shutdown) may interrupt a delete
    midway, which the delete's order makes safe.
    """
    while True:
        try:
            await sweep_expired(assistant)
        except Exception:
            log.warning("sweeping expired conversations failed", exc_info=True)
        await asyncio.sleep(interval.total_seconds())
