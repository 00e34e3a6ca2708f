"""The relational store on the real embedded PostgreSQL."""

from __future__ import annotations

import uuid

from convrag.records import Citation
from convrag.services import Services
from convrag.stores.database import MIGRATIONS, NewTurn, hash_key


async def test_setup_is_idempotent(services: Services) -> None:
    assert await services.db.setup() == 0
    assert await services.db.setup() == 0
    async with services.db.pool.connection() as conn:
        row = await (await conn.execute("SELECT count(*) AS n FROM convrag_migrations")).fetchone()
    assert row is not None and row["n"] == len(MIGRATIONS)


async def test_turn_tables_have_the_seed_columns(services: Services) -> None:
    async with services.db.pool.connection() as conn:
        cols = {
            (r["table_name"], r["column_name"])
            for r in await (
                await conn.execute(
                    "SELECT table_name, column_name FROM information_schema.columns "
                    "WHERE table_name IN ('conversation_turns', 'message_citations')"
                )
            ).fetchall()
        }
    for c in (
        "turn_number",
        "question",
        "answer",
        "contextualized_query",
        "entities_mentioned",
        "sources",
        "web_search_triggered",
        "repetition_detected",
        "metadata",
        "created_at",
        "workspace_id",
    ):
        assert ("conversation_turns", c) in cols
    for c in (
        "message_id",
        "citation_marker",
        "position_in_response",
        "source_type",
        "source_id",
        "relevance_score",
        "content_snippet",
        "created_at",
        "workspace_id",
    ):
        assert ("message_citations", c) in cols


async def test_api_keys_are_stored_hashed_and_resolve_to_their_workspace(
    services: Services, workspace: str
) -> None:
    key = await services.db.create_api_key(workspace)
    async with services.db.pool.connection() as conn:
        rows = await (await conn.execute("SELECT key_hash FROM api_keys")).fetchall()
    assert all(key not in r["key_hash"] for r in rows)
    assert any(r["key_hash"] == hash_key(key) for r in rows)
    assert await services.db.workspace_for_key(key) == workspace
    assert await services.db.workspace_for_key(key + "x") is None
    assert await services.db.revoke_api_key(key)
    assert await services.db.workspace_for_key(key) is None
    assert not await services.db.revoke_api_key(key)


def _turn(workspace: str, conversation: str, question: str) -> NewTurn:
    return NewTurn(
        id=str(uuid.uuid4()),
        workspace_id=workspace,
        conversation_id=conversation,
        question=question,
        answer="A [1]",
        contextualized_query=question,
        entities=["A"],
        sources=[],
        web_search_triggered=False,
        repetition_detected=False,
        intent="standalone",
        confidence=None,
        citations=[
            Citation(
                marker="[1]",
                position=2,
                source_index=1,
                source_id=str(uuid.uuid4()),
                source_type="chunk",
                document_id=None,
                url=None,
                score=0.5,
                snippet="snippet",
            )
        ],
    )


async def test_saving_a_turn_twice_writes_it_once(services: Services, workspace: str) -> None:
    conv = await services.db.create_conversation(workspace)
    turn = _turn(workspace, conv, "q1")
    assert await services.db.save_turn(turn) is True
    assert await services.db.save_turn(turn) is False
    turns = await services.db.all_turns(workspace, conv)
    assert [t.turn_number for t in turns] == [1]
    cites = await services.db.citations(workspace, turn.id)
    assert cites is not None and len(cites) == 1


async def test_turns_are_numbered_in_order_and_scoped_to_the_workspace(
    services: Services, workspace: str
) -> None:
    conv = await services.db.create_conversation(workspace)
    for q in ("q1", "q2", "q3"):
        await services.db.save_turn(_turn(workspace, conv, q))
    recent = await services.db.recent_turns(workspace, conv, limit=2)
    assert [(t.turn_number, t.question) for t in recent] == [(2, "q2"), (3, "q3")]
    assert await services.db.recent_turns(workspace + "-b", conv) == []
    assert not await services.db.conversation_exists(workspace + "-b", conv)
    assert await services.db.citations(workspace + "-b", recent[0].id) is None


async def test_deleting_a_conversation_cascades_to_turns_and_citations(
    services: Services, workspace: str
) -> None:
    conv = await services.db.create_conversation(workspace)
    turn = _turn(workspace, conv, "q")
    await services.db.save_turn(turn)
    assert not await services.db.delete_conversation(workspace + "-b", conv)
    assert await services.db.delete_conversation(workspace, conv)
    assert await services.db.citations(workspace, turn.id) is None
    async with services.db.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM message_citations WHERE message_id = %s", (turn.id,)
            )
        ).fetchone()
    assert row is not None and row["n"] == 0
