"""Conversation routes: create, list (cursor pages), read, rename, export, delete."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.api.fakes import ANSWER, CITATION, SOURCE, FakeStack
from tests.unit.api.routers.checks import assert_422_naming, assert_the_same_404


async def _answered(stack: FakeStack, workspace: str = "acme", question: str = "Salary?") -> str:
    """A conversation of ``workspace`` with one answered turn citing :data:`SOURCE`."""
    cid = await stack.db.conversations.create_conversation(workspace)
    stack.db.turns.add_turn(
        workspace, cid, question, ANSWER, sources=[SOURCE], citations=[CITATION]
    )
    return cid


@pytest.fixture
async def answered(stack: FakeStack) -> str:
    """The id of a conversation of ``acme`` with one answered turn citing :data:`SOURCE`."""
    return await _answered(stack)


async def test_a_created_conversation_is_201_with_its_id_and_listed(
    api: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    resp = await api.post("/v1/conversations", headers=auth)
    assert resp.status_code == 201
    cid = resp.json()["conversation_id"]
    listed = (await api.get("/v1/conversations", headers=auth)).json()
    assert [c["id"] for c in listed["conversations"]] == [cid]
    assert listed["conversations"][0]["turn_count"] == 0


async def test_a_conversation_created_with_a_title_is_listed_under_it_stripped(
    api: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    resp = await api.post("/v1/conversations", json={"title": "  Payroll  "}, headers=auth)
    assert resp.status_code == 201
    listed = (await api.get("/v1/conversations", headers=auth)).json()["conversations"]
    assert listed[0]["title"] == "Payroll"


async def test_creating_with_an_unknown_field_gets_422_naming_it(
    api: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    resp = await api.post("/v1/conversations", json={"name": "x"}, headers=auth)
    assert_422_naming(resp, "name")


async def test_conversations_are_listed_by_last_activity_in_cursor_pages(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    ids = [await stack.db.conversations.create_conversation("acme") for _ in range(3)]
    stack.db.turns.add_turn("acme", ids[0], "What is the leave policy?", "20 days.")
    first = (await api.get("/v1/conversations?limit=2", headers=auth)).json()
    assert [c["id"] for c in first["conversations"]] == [ids[0], ids[2]]
    assert first["conversations"][0]["title"] == "What is the leave policy?"
    cursor = first["next_cursor"]
    second = (await api.get(f"/v1/conversations?limit=2&cursor={cursor}", headers=auth)).json()
    assert [c["id"] for c in second["conversations"]] == [ids[1]]
    assert second["next_cursor"] is None


async def test_another_workspaces_conversations_are_not_listed(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    await stack.db.conversations.create_conversation("other")
    listed = (await api.get("/v1/conversations", headers=auth)).json()
    assert listed == {"conversations": [], "next_cursor": None}


async def test_a_limit_out_of_range_or_a_bad_cursor_gets_422_naming_the_parameter(
    api: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    for query, field in (
        ("limit=0", "query.limit"),
        ("limit=101", "query.limit"),
        ("cursor=abc", "query.cursor"),
    ):
        resp = await api.get(f"/v1/conversations?{query}", headers=auth)
        assert_422_naming(resp, field, query)


async def test_a_documents_cursor_is_refused_by_the_conversations_list(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    for source in ("a.txt", "b.txt"):
        stack.db.documents.add_document("acme", source)
    docs = await api.get("/v1/documents?limit=1", headers=auth)
    cursor = docs.headers["X-Next-Cursor"]
    resp = await api.get(f"/v1/conversations?cursor={cursor}", headers=auth)
    assert resp.status_code == 422
    assert "a cursor of documents, not of conversations" in resp.json()["detail"]


async def test_a_conversation_reads_as_its_turns_with_their_ratings(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    cid = await _answered(stack)
    turn_id = next(iter(stack.db.rows.turns))
    await stack.db.feedback.save_feedback("acme", turn_id, "up", "spot on")
    resp = await api.get(f"/v1/conversations/{cid}", headers=auth)
    assert resp.status_code == 200
    body = resp.json()
    assert body["conversation_id"] == cid
    (turn,) = body["turns"]
    assert (turn["id"], turn["question"], turn["answer"]) == (turn_id, "Salary?", ANSWER)
    assert (turn["status"], turn["confidence"]) == ("done", "high")
    assert turn["feedback"]["rating"] == "up"


async def test_a_failed_turn_is_shown_with_why(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    cid = await stack.db.conversations.create_conversation("acme")
    stack.db.turns.add_turn("acme", cid, "Salary?", status="failed", error="the LLM timed out")
    (turn,) = (await api.get(f"/v1/conversations/{cid}", headers=auth)).json()["turns"]
    assert (turn["status"], turn["error"], turn["answer"]) == ("failed", "the LLM timed out", "")


async def test_another_workspaces_unknown_or_malformed_ids_get_the_same_404(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    theirs = await _answered(stack, "other")
    paths = [
        "GET /v1/conversations/{id}",
        "GET /v1/conversations/{id}/export",
        "DELETE /v1/conversations/{id}",
    ]
    await assert_the_same_404(api, auth, theirs, "conversation", paths)
    assert theirs in stack.db.rows.conversations


async def test_an_upper_case_id_is_the_same_conversation(
    api: httpx.AsyncClient, auth: dict[str, str], answered: str
) -> None:
    resp = await api.get(f"/v1/conversations/{answered.upper()}", headers=auth)
    assert resp.status_code == 200
    assert resp.json()["conversation_id"] == answered


async def test_a_rename_answers_the_conversation_under_its_stripped_title(
    api: httpx.AsyncClient, auth: dict[str, str], answered: str
) -> None:
    resp = await api.patch(f"/v1/conversations/{answered}", json={"title": " Pay "}, headers=auth)
    assert resp.status_code == 200
    body = resp.json()
    assert (body["id"], body["title"], body["turn_count"]) == (answered, "Pay", 1)


async def test_a_blank_multi_line_or_missing_title_gets_422_naming_title(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    cid = await stack.db.conversations.create_conversation("acme")
    for body in ({"title": "   "}, {"title": "a\nb"}, {"title": "x" * 201}, {}):
        resp = await api.patch(f"/v1/conversations/{cid}", json=body, headers=auth)
        assert_422_naming(resp, "title", body)


async def test_renaming_another_workspaces_conversation_gets_404_and_changes_nothing(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    theirs = await stack.db.conversations.create_conversation("other")
    resp = await api.patch(f"/v1/conversations/{theirs}", json={"title": "Mine"}, headers=auth)
    assert resp.status_code == 404
    assert stack.db.rows.conversations[theirs].title is None


async def test_a_json_export_holds_every_turn_with_what_it_cites_as_an_attachment(
    api: httpx.AsyncClient, auth: dict[str, str], answered: str
) -> None:
    resp = await api.get(f"/v1/conversations/{answered}/export", headers=auth)
    assert resp.status_code == 200
    assert resp.headers["Content-Disposition"] == (
        f'attachment; filename="conversation-{answered}.json"'
    )
    body = resp.json()
    assert body["conversation"]["id"] == answered
    (turn,) = body["turns"]
    assert turn["answer"] == ANSWER
    assert turn["citations"] == [
        {
            "marker": "[1]",
            "source_type": "document",
            "title": "Employees",
            "document_id": SOURCE["document_id"],
            "page": None,
            "url": None,
            "snippet": SOURCE["snippet"],
        }
    ]


async def test_a_markdown_export_lists_each_answers_sources_and_escapes_markup(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    cid = await _answered(stack, question="<script>alert(1)</script> salary?")
    resp = await api.get(f"/v1/conversations/{cid}/export?format=md", headers=auth)
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "text/markdown; charset=utf-8"
    assert resp.headers["Content-Disposition"].endswith(f'conversation-{cid}.md"')
    text = resp.text
    assert "## 1. &lt;script&gt;alert(1)&lt;/script&gt; salary?" in text
    assert "<script>" not in text
    assert "**Sources**" in text
    assert f"- [1] **Employees** (document `{SOURCE['document_id']}`)" in text


async def test_an_export_in_another_format_gets_422_naming_format(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    cid = await stack.db.conversations.create_conversation("acme")
    resp = await api.get(f"/v1/conversations/{cid}/export?format=pdf", headers=auth)
    assert_422_naming(resp, "query.format")


async def test_a_delete_is_204_and_clears_its_turns_and_vectors(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack, answered: str
) -> None:
    resp = await api.delete(f"/v1/conversations/{answered}", headers=auth)
    assert resp.status_code == 204
    assert resp.content == b""
    assert answered not in stack.db.rows.conversations
    assert stack.db.rows.turns == {}
    assert stack.index.deleted == [("acme", answered)]
    assert (await api.get(f"/v1/conversations/{answered}", headers=auth)).status_code == 404


async def test_deleting_a_conversation_while_it_answers_gets_409_and_keeps_it(
    api: httpx.AsyncClient, auth: dict[str, str], stack: FakeStack
) -> None:
    cid = await stack.db.conversations.create_conversation("acme")
    stack.graph.hold = asyncio.Event()
    url = f"/v1/conversations/{cid}/messages"
    asking = asyncio.create_task(
        api.post(url, json={"content": "Salary?"}, headers={**auth, "Accept": "application/json"})
    )
    await stack.graph.started.wait()
    resp = await api.delete(f"/v1/conversations/{cid}", headers=auth)
    stack.graph.hold.set()
    assert (await asking).status_code == 200
    assert resp.status_code == 409
    assert cid in stack.db.rows.conversations
    assert stack.index.deleted == []
