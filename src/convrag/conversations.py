"""Conversation lifecycle actions that span several stores.

A conversation lives in three places: its rows in Postgres (the conversation, its turns
and their citations), its checkpoint thread in the graph's checkpointer, and its memory
vectors in Milvus. Deleting one must clear all three, in one place that the HTTP
service, the CLI and library callers share, so none of them reaches into a store or
the checkpointer to do it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from convrag.assistant import Assistant


async def delete_conversation(
    assistant: Assistant, workspace_id: str, conversation_id: str
) -> bool:
    """Delete a conversation's memory vectors, checkpoints, turns and citations.

    Returns False, touching nothing, when the conversation is not this workspace's:
    checkpoint threads are keyed by the conversation id alone, so Postgres, which knows
    the owner, is asked first. The Postgres rows go last: if Milvus or the checkpointer
    fails, the conversation is still listed and a retried DELETE finishes the job, instead
    of leaving vectors no row points to.
    """
    services = assistant.services
    if not await services.db.conversation_exists(workspace_id, conversation_id):
        return False
    await asyncio.to_thread(services.index.delete_conversation, workspace_id, conversation_id)
    await services.db.delete_thread(conversation_id)
    return await services.db.delete_conversation(workspace_id, conversation_id)
