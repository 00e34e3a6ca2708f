"""The OpenAI route's chats: which stored conversation a request continues, and the
history and question its messages hold.

An OpenAI client resends the whole chat with each request. After each answer the route
remembers a hash of the chat so far (user and assistant messages in order, whitespace
collapsed, ending with the stored answer: :class:`Transcript`); the next request's
earlier messages hash to it when the client resends the chat as it got it, and its turn
continues that conversation (:func:`continued`). A request may also name its
conversation (``metadata.conversation_id`` or the ``X-Conversation-Id`` header:
:func:`named_conversation`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from convrag.api.errors import shown
from convrag.api.schemas import MAX_MESSAGE_CHARS, ChatCompletionIn
from convrag.context import Context
from convrag.ids import is_uuid
from convrag.records import HistoryTurn
from convrag.rewriting.classify import is_chit_chat
from convrag.services import Services
from convrag.stores.database import Database
from convrag.text.entities import extract_entities

log = logging.getLogger(__name__)


class InvalidRequest(Exception):
    """A request OpenAI's API would refuse: a 400 ``invalid_request_error`` naming the
    field at fault (``param``) and why (``code``); or another 4xx (``status_code``):
    a 404 for a conversation it names that does not exist, a 409 for one that is busy."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        status_code: int = 400,
    ):
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code
        self.status_code = status_code


CONVERSATION_HEADER = "X-Conversation-Id"


@dataclass(frozen=True)
class Transcript:
    """A request's chat as it is matched with stored conversations: its user and
    assistant messages before the question (``earlier``), each as ``(role, text)`` with
    its whitespace collapsed, and the question. Its hash with the answer stored
    (:meth:`with_answer`) is what the next request's earlier messages hash to
    (:meth:`earlier_hash`) when the client resends the chat as it got it."""

    earlier: tuple[tuple[str, str], ...]
    question: str

    @classmethod
    def of(cls, body: ChatCompletionIn) -> Transcript:
        """The chat of a request whose last user or assistant message is its question
        (:func:`history_from_messages` has checked that)."""
        chat = [
            (m.role, normalised(text_of(m.content)))
            for m in body.messages
            if m.role in ("user", "assistant")
        ]
        return cls(earlier=tuple(chat[:-1]), question=chat[-1][1])

    def earlier_hash(self) -> str:
        """The hash of the chat before the question."""
        return chat_hash(self.earlier)

    def with_answer(self, answer: str) -> str:
        """The hash of the chat once ``answer`` has answered the question."""
        return chat_hash(
            (*self.earlier, ("user", self.question), ("assistant", normalised(answer)))
        )


def normalised(text: str) -> str:
    """``text`` with its whitespace collapsed: a client may trim or re-wrap what it
    resends."""
    return " ".join(text.split())


def chat_hash(chat: tuple[tuple[str, str], ...]) -> str:
    """A SHA-256 of the ``(role, text)`` messages, in order."""
    return hashlib.sha256(json.dumps(chat, ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class Named:
    """A conversation a request names: its id (a canonical UUID), and where (``param``:
    ``metadata.conversation_id`` or the ``X-Conversation-Id`` header)."""

    id: str
    param: str


def named_conversation(body: ChatCompletionIn, header: str | None) -> Named | None:
    """The conversation the request names (``metadata.conversation_id``, or the
    ``X-Conversation-Id`` header); None when it names none. A 400 for an id that is not
    a UUID, or two that differ."""
    metadata = (body.model_extra or {}).get("metadata")
    in_body = metadata.get("conversation_id") if isinstance(metadata, dict) else None
    named: dict[str, object] = {
        p: v
        for p, v in (("metadata.conversation_id", in_body), (CONVERSATION_HEADER, header))
        if v is not None and v != ""
    }
    ids: list[Named] = []
    for param, value in named.items():
        if not isinstance(value, str) or not is_uuid(value):
            raise InvalidRequest(
                f"{param}: {shown(str(value))} is not a conversation id (a UUID, as "
                "`conversation_id` in a reply gives it)",
                param=param,
                code="invalid_value",
            )
        ids.append(Named(str(uuid.UUID(value)), param))
    if len({n.id for n in ids}) > 1:
        raise InvalidRequest(
            f"metadata.conversation_id and {CONVERSATION_HEADER} name different "
            "conversations; name one",
            param="metadata.conversation_id",
            code="invalid_value",
        )
    return ids[0] if ids else None


async def continued(
    db: Database, workspace: str, named: Named | None, transcript: Transcript
) -> str | None:
    """The conversation the request continues: the one it names (a 404 when that is no
    conversation of the workspace), else the one whose chat its earlier messages are;
    None for a new one."""
    if named is not None:
        if not await db.conversations.conversation_exists(workspace, named.id):
            raise InvalidRequest(
                f"{named.param}: conversation {shown(named.id)} not found in this workspace",
                param=named.param,
                code="conversation_not_found",
                status_code=404,
            )
        return named.id
    if not transcript.earlier:
        return None
    return await db.conversations.conversation_of_transcript(workspace, transcript.earlier_hash())


async def history_sent(
    services: Services, context: Context, conversation_id: str, sent: list[HistoryTurn]
) -> list[HistoryTurn] | None:
    """The history the continued conversation's turn reads: None (its stored turns,
    whose cited documents guide a follow-up's search) when they are the history the
    request sends, chit-chat before them aside, or when it sends none (only the new
    message, to a conversation it names); else the request's (``sent``)."""
    if not sent:
        return None
    stored = await services.db.turns.recent_turns(
        workspace_id=context.workspace_id,
        conversation_id=conversation_id,
        limit=context.history_turns,
    )
    pairs = [(normalised(t.question), normalised(t.answer[:MAX_MESSAGE_CHARS])) for t in stored]
    sent_pairs = [(normalised(h["question"]), normalised(h["answer"])) for h in sent]
    cut = len(sent_pairs) - len(pairs)  # the messages sent before the stored turns
    if not pairs or cut < 0 or sent_pairs[cut:] != pairs:
        return sent
    window_full = len(pairs) >= context.history_turns
    if not window_full and not all(is_chit_chat(q) for q, _ in sent_pairs[:cut]):
        return sent
    return None


async def remember_chat(
    services: Services, workspace: str, conversation_id: str, transcript_hash: str
) -> None:
    """Remember the chat answered in the conversation, for its next request to find it;
    a failure is logged, not the reply's (that next request starts a new one)."""
    try:
        await services.db.conversations.remember_transcript(
            workspace, conversation_id, transcript_hash
        )
    except Exception:
        log.warning(
            "remembering the chat of conversation %s failed", conversation_id, exc_info=True
        )


def text_of(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return " ".join(str(p.get("text", "")) for p in content if p.get("type") == "text")


def history_from_messages(body: ChatCompletionIn) -> tuple[list[HistoryTurn], str]:
    """(history, question): the last user message is the question; the history is the
    last 5 user/assistant pairs before it, the window a stored conversation gets by
    default (``Context.history_turns``), each text cut to :data:`MAX_MESSAGE_CHARS` as a
    stored question is (a client may resend a long pasted text with every request).
    System, developer and tool messages are not read."""
    convo = [
        (i, m.role, text_of(m.content))
        for i, m in enumerate(body.messages)
        if m.role in ("user", "assistant")
    ]
    if not convo or convo[-1][1] != "user":
        raise InvalidRequest(
            "messages: the last user or assistant message must be a user message (the "
            "question to answer)",
            param="messages",
            code="invalid_value",
        )
    index, _, text = convo.pop()
    question = text.strip()
    if not question or len(question) > MAX_MESSAGE_CHARS:
        got = f"{len(question)} characters" if question else "no text"
        raise InvalidRequest(
            f"messages[{index}].content: the question must have 1 to {MAX_MESSAGE_CHARS} "
            f"characters of text, it has {got}",
            param=f"messages[{index}].content",
            code="string_above_max_length" if question else "invalid_value",
        )
    turns: list[HistoryTurn] = []
    pending: str | None = None
    for _, role, text in convo[-10:]:
        text = text[:MAX_MESSAGE_CHARS]
        if role == "user":
            pending = text
        elif pending is not None:
            turns.append(
                HistoryTurn(
                    turn_number=len(turns) + 1,
                    question=pending,
                    answer=text,
                    contextualized_query=None,
                    entities=extract_entities(text),
                    cited_document_ids=[],
                )
            )
            pending = None
    return turns[-5:], question
