"""Conversation routes: create, list, rename, read, export and delete conversations.

Asking a question in a conversation is :mod:`convrag.api.routers.messages`.
"""

from __future__ import annotations

import re
from datetime import UTC
from typing import Annotated, Literal

from fastapi import APIRouter, HTTPException, Query, Response, status
from fastapi.responses import JSONResponse

from convrag.api.deps import (
    AssistantDep,
    ConversationPageDep,
    OwnedConversation,
    RunnerDep,
    ServicesDep,
    WorkspaceDep,
)
from convrag.api.errors import not_found
from convrag.api.schemas import (
    ConversationCreate,
    ConversationDetail,
    ConversationExport,
    ConversationOut,
    ConversationPage,
    ConversationRename,
    ConversationSummary,
    TurnOut,
    error_responses,
    keyed_route_responses,
)
from convrag.conversations import delete_conversation as delete_everywhere
from convrag.errors import ConversationInUse
from convrag.stores.citations import CitedSource

router = APIRouter(tags=["conversations"], responses=keyed_route_responses())

_NOT_FOUND = "No such conversation in this workspace."


@router.post(
    "/v1/conversations",
    response_model=ConversationOut,
    status_code=201,
    responses=error_responses({422: 'A body other than `{}` or `{"title": ...}`.'}),
)
async def create_conversation(
    workspace: WorkspaceDep, services: ServicesDep, body: ConversationCreate | None = None
) -> ConversationOut:
    """Start a conversation, optionally named (the body may be left out)."""
    conversation_id = await services.db.conversations.create_conversation(workspace)
    if body is not None and body.title is not None:
        await services.db.conversations.rename_conversation(workspace, conversation_id, body.title)
    return ConversationOut(conversation_id=conversation_id)


@router.get(
    "/v1/conversations",
    response_model=ConversationPage,
    responses=error_responses({422: "`limit` out of 1..100, or a malformed `cursor`."}),
)
async def list_conversations(
    workspace: WorkspaceDep, services: ServicesDep, page: ConversationPageDep
) -> ConversationPage:
    """The caller's conversations, most recently active first, a page at a time.

    Each has a title (the name it was given, else its first question), its creation and
    last-activity times and its number of turns. Pass ``next_cursor`` as ``cursor`` for
    the next page; it is null on the last one. Pages are keyed by position, not by
    offset, so a conversation created meanwhile does not shift the pages that follow.
    """
    rows = await services.db.conversations.list_conversations(
        workspace, limit=page.limit + 1, after=page.after
    )
    kept, next_cursor = page.cut(rows, lambda c: (c.updated_at, c.id))
    return ConversationPage(
        conversations=[ConversationSummary.model_validate(c) for c in kept],
        next_cursor=next_cursor,
    )


@router.get(
    "/v1/conversations/{conversation_id}",
    response_model=ConversationDetail,
    responses=error_responses({404: _NOT_FOUND}),
)
async def get_conversation(
    conversation_id: OwnedConversation, workspace: WorkspaceDep, services: ServicesDep
) -> ConversationDetail:
    """The conversation's turns, oldest first, each with the user's rating if any."""
    turns = await services.db.transcripts.turn_details(workspace, conversation_id)
    return ConversationDetail(
        conversation_id=conversation_id, turns=[TurnOut.model_validate(t) for t in turns]
    )


@router.patch(
    "/v1/conversations/{conversation_id}",
    response_model=ConversationSummary,
    responses=error_responses(
        {404: _NOT_FOUND, 422: "`title` missing, blank, over 200 characters or not one line."}
    ),
)
async def rename_conversation(
    conversation_id: OwnedConversation,
    body: ConversationRename,
    workspace: WorkspaceDep,
    services: ServicesDep,
) -> ConversationSummary:
    """Rename the conversation; it is then listed under ``title`` instead of its first
    question. Its place in the list (last activity) does not change."""
    renamed = await services.db.conversations.rename_conversation(
        workspace, conversation_id, body.title
    )
    if renamed is None:  # deleted between the ownership check and the update
        raise not_found("conversation", conversation_id)
    return ConversationSummary.model_validate(renamed)


ExportFormat = Literal["json", "md"]


@router.get(
    "/v1/conversations/{conversation_id}/export",
    response_model=ConversationExport,
    responses={
        200: {
            "content": {"text/markdown": {"schema": {"type": "string"}}},
            "description": "The conversation as JSON (`format=json`, the default) or "
            "Markdown (`format=md`).",
        },
        **error_responses({404: _NOT_FOUND, 422: "`format` is neither `json` nor `md`."}),
    },
)
async def export_conversation(
    conversation_id: OwnedConversation,
    workspace: WorkspaceDep,
    services: ServicesDep,
    format: Annotated[
        ExportFormat, Query(description="`json` (the default) or `md` (Markdown).")
    ] = "json",
) -> Response:
    """The whole conversation to keep or share: every question and answer with what
    each ``[n]`` cites (title, document id, PDF page, snippet). As Markdown, each
    answer is followed by its citations as a numbered list. Sent as an attachment named
    after the conversation."""
    transcript = await services.db.transcripts.transcript(workspace, conversation_id)
    if transcript is None:  # deleted between the ownership check and the read
        raise not_found("conversation", conversation_id)
    export = ConversationExport.model_validate(transcript)
    disposition = {
        "Content-Disposition": f'attachment; filename="conversation-{conversation_id}.{format}"'
    }
    if format == "md":
        return Response(
            to_markdown(export), media_type="text/markdown; charset=utf-8", headers=disposition
        )
    return JSONResponse(export.model_dump(mode="json"), headers=disposition)


def to_markdown(export: ConversationExport) -> str:
    """The conversation as Markdown: a heading with its title, then each turn's question
    and answer, the page's notes on it (not found, repetition), its citations listed
    by their markers under the answer."""
    c = export.conversation
    started, active = (
        t.astimezone(UTC).strftime("%Y-%m-%d %H:%M") for t in (c.created_at, c.updated_at)
    )
    lines = [
        f"# {_one_line(c.title or 'Untitled conversation')}",
        "",
        f"Conversation `{c.id}`, started {started} UTC, last active {active} UTC, "
        f"{c.turn_count} turn{'' if c.turn_count == 1 else 's'}.",
    ]
    for turn in export.turns:
        lines += ["", f"## {turn.turn_number}. {_one_line(turn.question)}", ""]
        lines += [_inert(turn.answer) or "_(no answer)_"]
        if notes := _answer_notes(turn):
            lines += ["", " ".join(f"_{note}_" for note in notes)]
        if turn.citations:
            lines += ["", "**Sources**", ""]
            # Listed by their markers ("[4]"), not renumbered: a list numbered 1, 2, 3
            # beside markers [1], [2], [4] would point at the wrong source.
            lines += [f"- {_citation(t)}" for t in turn.citations]
        if turn.feedback is not None:
            note = f": {_one_line(turn.feedback.comment)}" if turn.feedback.comment else ""
            lines += ["", f"_Rated {turn.feedback.rating}{note}_"]
    return "\n".join(lines) + "\n"


def _answer_notes(turn: TurnOut) -> list[str]:
    """What the chat page says under a stored answer about how it was given: "not found",
    and a repetition replaced or left in."""
    notes = []
    if turn.no_answer:
        notes.append("Not found in the workspace's documents.")
    if turn.flags.get("repetition_unresolved"):
        notes.append("Could not avoid repeating information from an earlier answer.")
    elif turn.repetition_detected:
        notes.append("Repeated information was replaced with new details.")
    return notes


def _citation(cited: CitedSource) -> str:
    """One entry of a Sources list: the marker, the title, where it is, and the snippet."""
    where = []
    if cited.page is not None:
        where.append(f"page {cited.page}")
    if cited.document_id:
        where.append(f"document `{cited.document_id}`")
    if cited.url:
        link = cited.url.startswith(("https://", "http://")) and not _UNSAFE_IN_LINK.search(
            cited.url
        )
        where.append(f"<{cited.url}>" if link else f"`{cited.url.replace('`', '')}`")
    title = _one_line(cited.title or cited.url or "untitled source")
    snippet = _one_line(cited.snippet)
    return (
        f"{cited.marker} **{title}**"
        + (f" ({', '.join(where)})" if where else "")
        + (f": “{snippet}”" if snippet else "")
    )


def _one_line(text: str) -> str:
    """``text`` with its whitespace runs (line breaks included) as single spaces, inert
    (see :func:`_inert`)."""
    return _inert(" ".join(text.split()))


_UNSAFE_IN_LINK = re.compile(r"[\s<>]")
_SCRIPT_LINK = re.compile(r"\]\(\s*(?=(?:javascript|vbscript|data):)", re.IGNORECASE)


def _inert(text: str) -> str:
    """``text`` that a Markdown viewer shows as written: ``<`` and ``>`` as entities, so a
    question holding ``<script>`` is not run as HTML, and a ``[link](javascript:...)``
    broken so it is not a link. Questions, answers and snippets are text, never markup."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SCRIPT_LINK.sub("]\\(", text)


@router.delete(
    "/v1/conversations/{conversation_id}",
    status_code=204,
    responses=error_responses(
        {
            404: _NOT_FOUND,
            409: "The conversation is still answering a message, or another delete of "
            "it is under way (in any worker).",
        }
    ),
)
async def delete_conversation(
    conversation_id: OwnedConversation,
    workspace: WorkspaceDep,
    assistant: AssistantDep,
    runner: RunnerDep,
) -> Response:
    """Delete the conversation, its turns, citations, feedback and checkpoints.

    A message sent while it is deleted gets 409 (``the conversation is being deleted``),
    whichever worker it reaches: the delete marks the conversation in the database."""
    try:
        async with runner.deleting(workspace, conversation_id):
            await delete_everywhere(assistant, workspace, conversation_id)
    except ConversationInUse as exc:  # here (ConversationBusy) or in another worker
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    return Response(status_code=204)
