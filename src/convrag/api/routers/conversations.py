"""Conversation routes: create one, read its turns, delete it everywhere.

Asking a question in a conversation is :mod:`convrag.api.routers.messages`.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response, status

from convrag.api.deps import (
    AssistantDep,
    OwnedConversation,
    RunnerDep,
    ServicesDep,
    WorkspaceDep,
)
from convrag.api.schemas import ConversationDetail, ConversationOut, TurnOut
from convrag.conversations import delete_conversation as delete_everywhere

router = APIRouter(tags=["conversations"])


@router.post("/v1/conversations", response_model=ConversationOut, status_code=201)
async def create_conversation(workspace: WorkspaceDep, services: ServicesDep) -> ConversationOut:
    return ConversationOut(conversation_id=await services.db.create_conversation(workspace))


@router.get("/v1/conversations/{conversation_id}", response_model=ConversationDetail)
async def get_conversation(
    conversation_id: OwnedConversation, workspace: WorkspaceDep, services: ServicesDep
) -> ConversationDetail:
    turns = await services.db.all_turns(workspace, conversation_id)
    return ConversationDetail(
        conversation_id=conversation_id, turns=[TurnOut.from_record(t) for t in turns]
    )


@router.delete("/v1/conversations/{conversation_id}", status_code=204)
async def delete_conversation(
    conversation_id: OwnedConversation,
    workspace: WorkspaceDep,
    assistant: AssistantDep,
    runner: RunnerDep,
) -> Response:
    """Delete the conversation, its turns, citations, checkpoints and memory vectors."""
    if conversation_id in runner.active:
        raise HTTPException(
            status.HTTP_409_CONFLICT,
            "the conversation is answering a message; retry when it is done",
        )
    await delete_everywhere(assistant, workspace, conversation_id)
    return Response(status_code=204)
