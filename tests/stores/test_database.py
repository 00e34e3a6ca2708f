"""The relational store, on the embedded PostgreSQL and on a PostgreSQL server."""

from __future__ import annotations

import uuid

import pytest

from convrag.records import Citation, MalformedRecord, StoredSource, TurnMetadata
from convrag.stores.database import Database
from convrag.stores.records import NewTurn
from convrag.stores.schema import MIGRATIONS
from convrag.stores.workspaces import hash_key
from tests.stores.conftest import until_waiting_on_a_lock


async def test_setup_is_idempotent(db: Database) -> None:
    assert await db.setup() == 0
    assert await db.setup() == 0
    async with db.pool.connection() as conn:
        row = await (await conn.execute("SELECT count(*) AS n FROM convrag_migrations")).fetchone()
    assert row is not None and row["n"] == len(MIGRATIONS)


async def test_turn_tables_have_the_seed_columns(db: Database) -> None:
    async with db.pool.connection() as conn:
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
    db: Database, workspace: str
) -> None:
    key = await db.workspaces.create_api_key(workspace)
    async with db.pool.connection() as conn:
        rows = await (await conn.execute("SELECT key_hash FROM api_keys")).fetchall()
    assert all(key not in r["key_hash"] for r in rows)
    assert any(r["key_hash"] == hash_key(key) for r in rows)
    assert await db.workspaces.workspace_for_key(key) == workspace
    assert await db.workspaces.workspace_for_key(key + "x") is None
    assert await db.workspaces.revoke_api_key(key)
    assert await db.workspaces.workspace_for_key(key) is None
    assert not await db.workspaces.revoke_api_key(key)


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


async def test_saving_a_turn_twice_writes_it_once(db: Database, workspace: str) -> None:
    conv = await db.conversations.create_conversation(workspace)
    turn = _turn(workspace, conv, "q1")
    assert await db.turns.save_turn(turn) is True
    assert await db.turns.save_turn(turn) is False
    turns = await db.turns.all_turns(workspace, conv)
    assert [t.turn_number for t in turns] == [1]
    cites = await db.transcripts.citations(workspace, turn.id)
    assert cites is not None and len(cites) == 1


async def test_turns_are_numbered_in_order_and_scoped_to_the_workspace(
    db: Database, workspace: str
) -> None:
    conv = await db.conversations.create_conversation(workspace)
    for q in ("q1", "q2", "q3"):
        await db.turns.save_turn(_turn(workspace, conv, q))
    recent = await db.turns.recent_turns(workspace, conv, limit=2)
    assert [(t.turn_number, t.question) for t in recent] == [(2, "q2"), (3, "q3")]
    assert await db.turns.recent_turns(workspace + "-b", conv) == []
    assert not await db.conversations.conversation_exists(workspace + "-b", conv)
    assert await db.transcripts.citations(workspace + "-b", recent[0].id) is None


async def test_deleting_a_conversation_cascades_to_turns_and_citations(
    db: Database, workspace: str
) -> None:
    conv = await db.conversations.create_conversation(workspace)
    turn = _turn(workspace, conv, "q")
    await db.turns.save_turn(turn)
    assert not await db.conversations.delete_conversation(workspace + "-b", conv)
    assert await db.conversations.delete_conversation(workspace, conv)
    assert await db.transcripts.citations(workspace, turn.id) is None
    async with db.pool.connection() as conn:
        row = await (
            await conn.execute(
                "SELECT count(*) AS n FROM message_citations WHERE message_id = %s", (turn.id,)
            )
        ).fetchone()
    assert row is not None and row["n"] == 0


async def test_conversations_list_newest_activity_first_in_keyset_pages(
    db: Database, workspace: str
) -> None:
    convs = [await db.conversations.create_conversation(workspace) for _ in range(3)]
    await db.turns.save_turn(_turn(workspace, convs[0], "  Where do\nstaff park? "))
    await db.conversations.create_conversation(workspace + "-b")
    first = await db.conversations.list_conversations(workspace, limit=2)
    assert first[0].id == convs[0]  # its turn made it the most recently active
    assert first[0].title == "Where do staff park?" and first[0].turn_count == 1
    rest = await db.conversations.list_conversations(
        workspace, limit=10, after=(first[-1].updated_at, first[-1].id)
    )
    assert sorted(c.id for c in [*first, *rest]) == sorted(convs)
    assert all(c.title is None and c.turn_count == 0 for c in rest)
    renamed = await db.conversations.rename_conversation(workspace, convs[0], "Parking")
    assert renamed is not None and renamed.title == "Parking"
    assert renamed.updated_at == first[0].updated_at
    assert await db.conversations.rename_conversation(workspace + "-b", convs[1], "x") is None


async def test_feedback_is_one_per_turn_and_only_in_its_workspace(
    db: Database, workspace: str
) -> None:
    conv = await db.conversations.create_conversation(workspace)
    turn = _turn(workspace, conv, "q")
    await db.turns.save_turn(turn)
    assert await db.feedback.save_feedback(workspace + "-b", turn.id, "up", None) is None
    assert await db.feedback.save_feedback(workspace, str(uuid.uuid4()), "up", None) is None
    await db.feedback.save_feedback(workspace, turn.id, "up", "helpful")
    latest = await db.feedback.save_feedback(workspace, turn.id, "down", None)
    assert latest is not None and (latest.rating, latest.comment) == ("down", None)
    [detail] = await db.transcripts.turn_details(workspace, conv, cited_sources=True)
    assert detail.feedback == latest
    assert [c.marker for c in detail.cited_sources] == ["[1]"]
    assert await db.transcripts.turn_details(workspace + "-b", conv) == []


async def test_api_keys_are_listed_by_fingerprint_never_by_key(
    db: Database, workspace: str
) -> None:
    kept = await db.workspaces.create_api_key(workspace)
    revoked = await db.workspaces.create_api_key(workspace)
    await db.workspaces.revoke_api_key(revoked)
    listed = await db.workspaces.list_api_keys(workspace)
    assert [k.fingerprint for k in listed] == [hash_key(kept)[:12], hash_key(revoked)[:12]]
    assert [k.revoked for k in listed] == [False, True]
    assert all(kept not in repr(k) and revoked not in repr(k) for k in listed)
    assert await db.workspaces.list_api_keys(workspace + "-b") == []


async def test_restart_recovery_marks_old_processing_turns_and_documents_failed(
    db: Database, workspace: str
) -> None:
    from datetime import timedelta

    from convrag.stores.documents import INTERRUPTED_DOCUMENT
    from convrag.stores.records import TurnStart
    from convrag.stores.turns import INTERRUPTED_TURN

    db = db
    conv = await db.conversations.create_conversation(workspace)
    conv2 = await db.conversations.create_conversation(
        workspace
    )  # one message at a time per conversation
    old, fresh = str(uuid.uuid4()), str(uuid.uuid4())
    for c, turn_id in ((conv, old), (conv2, fresh)):
        started = await db.turns.start_turn(TurnStart(workspace, c, turn_id, "A question?"), 5)
        assert started is not None and started.started and started.prior is None
    old_doc, fresh_doc = str(uuid.uuid4()), str(uuid.uuid4())
    for doc, source in ((old_doc, "upload:old.txt"), (fresh_doc, "upload:fresh.txt")):
        await db.documents.upsert_document_status(workspace, doc, source, status="processing")
    async with db.pool.connection() as conn:  # a process that died an hour ago left these
        await conn.execute(
            "UPDATE conversation_turns SET updated_at = now() - interval '1 hour' WHERE id = %s",
            (old,),
        )
        await conn.execute(
            "UPDATE documents SET updated_at = now() - interval '1 hour' WHERE id = %s",
            (old_doc,),
        )
    turns, docs = await db.recover_interrupted(timedelta(minutes=10))
    assert turns >= 1 and docs >= 1
    marked = await db.turns.get_turn(workspace, conv, old)
    assert marked is not None and (marked.status, marked.error) == ("failed", INTERRUPTED_TURN)
    live = await db.turns.get_turn(workspace, conv2, fresh)
    assert live is not None and live.status == "processing"  # another worker's, maybe
    row = await db.documents.get_document(workspace, old_doc)
    assert row is not None and (row["status"], row["error"]) == ("failed", INTERRUPTED_DOCUMENT)
    row = await db.documents.get_document(workspace, fresh_doc)
    assert row is not None and row["status"] == "processing"
    # A start of the failed turn's id takes it up again under its number; a done or
    # running one is left alone, and another workspace sees no conversation.
    again = await db.turns.start_turn(TurnStart(workspace, conv, old, "A question?"), 5)
    assert again is not None and again.started and again.prior == "failed"
    busy = await db.turns.start_turn(TurnStart(workspace, conv2, fresh, "A question?"), 5)
    assert busy is not None and not busy.started and busy.prior == "processing"
    assert (
        await db.turns.start_turn(TurnStart(workspace + "-b", conv, old, "?", create=False), 5)
        is None
    )
    assert await db.turns.fail_turn(workspace + "-b", fresh, "nope") is False
    assert await db.turns.get_turn(workspace + "-b", conv2, fresh) is None


async def test_an_upload_whose_process_died_is_stopped_for_the_next_start_to_resume(
    db: Database, workspace: str
) -> None:
    """An upload left ``processing`` by a process that is gone (killed mid-ingest) is
    marked stopped at once, whatever its age, so the start resumes it from its saved
    file; one whose process lives is left to it."""
    import uuid
    from datetime import timedelta

    from convrag.stores.documents import ORPHANED_DOCUMENT

    dead, live = str(uuid.uuid4()), str(uuid.uuid4())
    for doc, name in ((dead, "dead.txt"), (live, "live.txt")):
        await db.documents.upsert_document_status(
            workspace, doc, f"upload:{name}", status="processing", upload_path=f"/u/{name}"
        )
    async with db.pool.connection() as conn:  # a liveness key no process holds
        await conn.execute("UPDATE documents SET owner = 7 WHERE id = %s", (dead,))
    await db.recover_interrupted(timedelta(minutes=10))
    row = await db.documents.get_document(workspace, dead)
    assert row is not None and (row["status"], row["error"]) == ("processing", ORPHANED_DOCUMENT)
    assert (workspace, "/u/dead.txt") in await db.documents.stopped_uploads()
    assert (workspace, "/u/live.txt") not in await db.documents.stopped_uploads()


async def test_a_started_turn_is_numbered_on_start_and_history_skips_unanswered_turns(
    db: Database, workspace: str
) -> None:
    from convrag.stores.records import TurnStart

    db = db
    conv = await db.conversations.create_conversation(workspace)
    assert await db.turns.save_turn(_turn(workspace, conv, "First?"))
    pending = str(uuid.uuid4())
    started = await db.turns.start_turn(TurnStart(workspace, conv, pending, "Second?"), 5)
    assert started is not None and [t.question for t in started.history] == ["First?"]
    nxt = await db.turns.start_turn(TurnStart(workspace, conv, str(uuid.uuid4()), "Third?"), 5)
    assert nxt is not None and [t.question for t in nxt.history] == ["First?"]
    assert await db.turns.fail_turn(workspace, pending, "RuntimeError: boom")
    details = await db.transcripts.turn_details(workspace, conv)
    assert [(t.turn_number, t.status) for t in details] == [(1, "done"), (2, "failed")]
    done = _turn(workspace, conv, "Second?")
    done.id = pending
    assert await db.turns.complete_turn(done) is True  # a resumed run answers it after all
    assert await db.turns.complete_turn(done) is False  # idempotent on the turn id
    assert [t.question for t in await db.turns.all_turns(workspace, conv)] == ["First?", "Second?"]


async def test_a_conversation_answers_one_message_at_a_time_across_processes(
    db: Database, workspace: str
) -> None:
    """The 'processing' row is the lock another worker sees: a second turn of the same
    conversation is not started while the first is being answered."""
    import uuid as _uuid

    from convrag.stores.records import TurnStart

    db = db
    conv = await db.conversations.create_conversation(workspace)
    first = await db.turns.start_turn(TurnStart(workspace, conv, str(_uuid.uuid4()), "one?"), 5)
    second = await db.turns.start_turn(TurnStart(workspace, conv, str(_uuid.uuid4()), "two?"), 5)
    assert first is not None and first.started and not first.busy
    assert second is not None and not second.started and second.busy
    other = await db.conversations.create_conversation(workspace)
    elsewhere = await db.turns.start_turn(TurnStart(workspace, other, str(_uuid.uuid4()), "x?"), 5)
    assert elsewhere is not None and elsewhere.started


async def test_a_turn_whose_process_is_gone_neither_blocks_its_conversation_nor_its_retry(
    db: Database, workspace: str
) -> None:
    from datetime import timedelta

    from convrag.stores.records import TurnStart
    from convrag.stores.turns import INTERRUPTED_TURN

    db = db
    assert db.owner is not None  # this process holds its liveness lock
    conv = await db.conversations.create_conversation(workspace)
    live, orphan, nxt = (str(uuid.uuid4()) for _ in range(3))
    started = await db.turns.start_turn(TurnStart(workspace, conv, live, "A question?"), 5)
    assert started is not None and started.started
    blocked = await db.turns.start_turn(TurnStart(workspace, conv, nxt, "Another?"), 5)
    assert blocked is not None and blocked.busy and not blocked.started
    assert not await db.turns.turn_orphaned(live, timedelta(minutes=10))

    async with db.pool.connection() as conn:  # as if a killed process had started it
        await conn.execute(
            "UPDATE conversation_turns SET id = %s, owner = %s WHERE id = %s",
            (orphan, db.owner + 1 if db.owner < 2**31 - 1 else 1, live),
        )
    assert await db.turns.turn_orphaned(orphan, timedelta(minutes=10))
    again = await db.turns.start_turn(TurnStart(workspace, conv, nxt, "Another?"), 5)
    assert again is not None and again.started and not again.busy

    turns, _ = await db.recover_interrupted(timedelta(minutes=10))
    assert turns >= 1
    marked = await db.turns.get_turn(workspace, conv, orphan)
    assert marked is not None and (marked.status, marked.error) == ("failed", INTERRUPTED_TURN)
    running = await db.turns.get_turn(workspace, conv, nxt)
    assert running is not None and running.status == "processing"  # its process lives


async def test_a_turn_still_being_answered_is_counted_once_it_shows(
    db: Database, workspace: str
) -> None:
    """The list's ``turn_count`` counts the turns the conversation's detail shows: not one
    still ``processing``, which has nothing to show yet."""
    import uuid

    from convrag.stores.records import TurnStart

    conv = await db.conversations.create_conversation(workspace)
    started = await db.turns.start_turn(
        TurnStart(workspace, conv, str(uuid.uuid4()), "Parking?"), 5
    )
    assert started is not None and started.started
    listed = await db.conversations.get_conversation(workspace, conv)
    assert listed is not None and listed.turn_count == 0
    assert await db.transcripts.turn_details(workspace, conv) == []


async def test_a_turn_starting_while_its_conversation_is_deleted_finds_no_conversation(
    db: Database, workspace: str
) -> None:
    """A delete that commits between the turn's read of its conversation and its insert
    (another worker's, or the CLI's) is no database error: the conversation is gone."""
    import asyncio

    from convrag.stores.records import TurnStart

    conv = await db.conversations.create_conversation(workspace)
    start = TurnStart(workspace, conv, str(uuid.uuid4()), "A question?", create=False)
    async with (
        db.pool.connection() as deleter,
        db.pool.connection() as watcher,
        deleter.transaction(),
    ):
        await deleter.execute("DELETE FROM conversations WHERE id = %s", (conv,))
        starting = asyncio.create_task(db.turns.start_turn(start, 5))
        # until the start waits for the deleter's row lock
        await until_waiting_on_a_lock(watcher, starting, "INSERT INTO conversation_turns")
    assert await starting is None
    assert await db.turns.all_turns(workspace, conv) == []


async def test_a_handle_fails_only_the_turns_it_started_and_left_unanswered(
    db: Database, workspace: str
) -> None:
    """What ``langgraph dev`` does when a run with services of its own ends on an
    error or a cancel: another handle's running turn, and an answered one, stay."""
    from convrag.stores.records import TurnStart

    mine, answered, theirs = [
        await db.conversations.create_conversation(workspace) for _ in range(3)
    ]
    async with Database.from_url(db.pool.conninfo, max_size=2) as run:
        left = TurnStart(workspace, mine, str(uuid.uuid4()), "Left?")
        done = TurnStart(workspace, answered, str(uuid.uuid4()), "Done?")
        for start in (left, done):
            started = await run.turns.start_turn(start, 5)
            assert started is not None and started.started
        answer = _turn(workspace, answered, "Done?")
        answer.id = done.turn_id
        assert await run.turns.complete_turn(answer)
        other = TurnStart(workspace, theirs, str(uuid.uuid4()), "Elsewhere?")
        started = await db.turns.start_turn(other, 5)
        assert started is not None and started.started
        assert await run.turns.fail_own_turns("interrupted: stopped") == [left.turn_id]
    assert [
        (t.status, t.error)
        for c in (mine, answered)
        for t in await db.transcripts.turn_details(workspace, c)
    ] == [("failed", "interrupted: stopped"), ("done", None)]
    running = await db.turns.get_turn(workspace, theirs, other.turn_id)
    assert running is not None and running.status == "processing"


def _sourced_turn(workspace: str, conversation: str) -> NewTurn:
    """A turn whose answer cites its first source, a chunk titled "Leave (2024)"."""
    turn = _turn(workspace, conversation, "How much leave?")
    turn.sources = [
        StoredSource(
            n=1,
            id=turn.citations[0]["source_id"],
            type="chunk",
            title="Leave (2024)",
            score=0.5,
            page=2,
            cited=True,
        ),
        StoredSource(n=2, id=str(uuid.uuid4()), type="web", url="https://example.org", score=0.1),
    ]
    return turn


async def test_a_turns_records_read_back_as_written_and_its_export_keeps_their_titles(
    db: Database, workspace: str
) -> None:
    conv = await db.conversations.create_conversation(workspace)
    turn = _sourced_turn(workspace, conv)
    turn.metadata = TurnMetadata(flags={"low_confidence": True}, timings_ms={"persist": 2.5})
    assert await db.turns.save_turn(turn)
    (stored,) = await db.turns.all_turns(workspace, conv)
    assert (stored.sources, stored.metadata) == (turn.sources, turn.metadata)
    assert stored.assurance == "low"
    transcript = await db.transcripts.transcript(workspace, conv)
    assert transcript is not None
    # The cited chunk's document is not in the store: the title is the one stored then.
    assert [c.title for c in transcript.turns[0].cited_sources] == ["Leave (2024)"]


async def test_a_row_written_before_pages_and_sections_reads_and_a_malformed_one_is_named(
    db: Database, workspace: str
) -> None:
    conv = await db.conversations.create_conversation(workspace)
    turn = _sourced_turn(workspace, conv)
    assert await db.turns.save_turn(turn)
    old = '[{"n": 1, "id": "c1", "type": "chunk", "document_id": null, "title": "Leave", '
    old += '"url": null, "score": 0.5, "cited": true}]'
    async with db.pool.connection() as conn:
        await conn.execute(
            "UPDATE conversation_turns SET sources = %s WHERE id = %s", (old, turn.id)
        )
    (stored,) = await db.turns.all_turns(workspace, conv)
    assert [(s.title, s.page, s.section) for s in stored.sources] == [("Leave", None, None)]

    async with db.pool.connection() as conn:
        await conn.execute(
            "UPDATE conversation_turns SET sources = '[{\"n\": 1}]' WHERE id = %s", (turn.id,)
        )
    with pytest.raises(MalformedRecord, match=f"turn {turn.id}: .*source 1: id: Field required"):
        await db.turns.get_turn(workspace, conv, turn.id)


async def test_the_liveness_lock_is_taken_again_once_its_connection_is_lost(
    server_postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lost lock connection (its backend terminated, as a database restart does) is
    seen at once and the lock taken again, not at the next check: meanwhile another
    worker would take this process's turns for orphans."""
    import asyncio

    from convrag.stores.base import OWNER_LOCKS

    monkeypatch.setattr(Database, "LIVENESS_CHECK_S", 3600.0)  # no check in this test
    query = (
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
        " AND classid = %s AND objid = %s"
    )
    async with Database.from_url(server_postgres_url) as db:
        owner = db.owner
        assert owner is not None
        async with db.pool.connection() as conn:
            holder = (await (await conn.execute(query, (OWNER_LOCKS, owner))).fetchone())["pid"]
            await conn.execute("SELECT pg_terminate_backend(%s)", (holder,))
            again = None
            for _ in range(200):  # 10 s at most: far under the hour's check
                await asyncio.sleep(0.05)
                row = await (await conn.execute(query, (OWNER_LOCKS, owner))).fetchone()
                if row is not None and row["pid"] != holder:
                    again = row["pid"]
                    break
        assert again is not None and db.owner == owner
