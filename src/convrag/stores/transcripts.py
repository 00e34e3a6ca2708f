"""Answers read back whole: a conversation's turns with their feedback and what they
cite (its detail and its export), and one answer's citations."""

from __future__ import annotations

from convrag.ids import is_uuid
from convrag.records import Citation
from convrag.stores.base import PooledStore, Shared, owns
from convrag.stores.citations import answer_citations, conversation_cited_sources
from convrag.stores.conversations import ConversationStore
from convrag.stores.feedback import conversation_feedback
from convrag.stores.records import Transcript, TurnRecord
from convrag.stores.turns import last_turns


class TranscriptStore(PooledStore):
    """A workspace's answers as the API shows and exports them; the conversation's own
    row comes from ``conversations``, the store of the same database."""

    def __init__(self, shared: Shared, conversations: ConversationStore) -> None:
        super().__init__(shared)
        self.conversations = conversations

    async def turn_details(
        self, workspace_id: str, conversation_id: str, *, cited_sources: bool = False
    ) -> list[TurnRecord]:
        """Every turn, oldest first, with its feedback and, with ``cited_sources``, what
        each distinct marker of its answer cites (in order of first appearance)."""
        if not is_uuid(conversation_id):
            return []
        async with self.pool.connection() as conn:
            # Failed turns too (the question is kept, with why it has no answer); not
            # the one still being answered, which has nothing to show yet.
            turns = await last_turns(
                conn, workspace_id, conversation_id, 1_000_000, statuses=("done", "failed")
            )
            by_id = {t.id: t for t in turns}
            # .get: a turn written after the first read is not in this answer.
            for feedback in await conversation_feedback(conn, workspace_id, conversation_id):
                if (turn := by_id.get(feedback.message_id)) is not None:
                    turn.feedback = feedback
            if cited_sources:
                cited = await conversation_cited_sources(conn, workspace_id, conversation_id)
                for message_id, n, source in cited:
                    if (turn := by_id.get(message_id)) is not None:
                        turn.cited_sources.append(source.titled(turn.source(n)))
        return turns

    async def transcript(self, workspace_id: str, conversation_id: str) -> Transcript | None:
        """The whole conversation, every turn with its cited sources and feedback; None
        when it is not this workspace's."""
        conversation = await self.conversations.get_conversation(workspace_id, conversation_id)
        if conversation is None:
            return None
        turns = await self.turn_details(workspace_id, conversation_id, cited_sources=True)
        return Transcript(conversation, turns)

    async def citations(self, workspace_id: str, message_id: str) -> list[Citation] | None:
        """Stored citations of an answer; None when the message is not in this workspace."""
        async with self.pool.connection() as conn:
            if not await owns(conn, "conversation_turns", workspace_id, message_id):
                return None
            return await answer_citations(conn, workspace_id, message_id)
