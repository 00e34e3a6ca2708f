"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from convrag.records import SourceOut
from convrag.stores.database import TurnRecord

MAX_MESSAGE_CHARS = 8000


class RagOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    top_k: int = Field(default=5, ge=1, le=50)
    threshold: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Minimum relevance of a passage: its cosine similarity to the query.",
    )
    web_search: Literal["auto", "off", "on"] = "auto"


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    rag: RagOptions = Field(default_factory=RagOptions)


class ConversationOut(BaseModel):
    conversation_id: str


class TurnOut(BaseModel):
    id: str
    turn_number: int
    question: str
    answer: str
    contextualized_query: str | None
    repetition_detected: bool
    web_search_triggered: bool
    created_at: datetime

    @classmethod
    def from_record(cls, t: TurnRecord) -> TurnOut:
        """From a stored turn."""
        return cls(
            id=t.id,
            turn_number=t.turn_number,
            question=t.question,
            answer=t.answer,
            contextualized_query=t.contextualized_query,
            repetition_detected=t.repetition_detected,
            web_search_triggered=t.web_search_triggered,
            created_at=t.created_at,
        )


class ConversationDetail(BaseModel):
    conversation_id: str
    turns: list[TurnOut]


class CitationOut(BaseModel):
    """A :class:`~convrag.records.Citation` as the API shows it.

    Validate a citation record with ``CitationOut.model_validate(citation)``: the record's
    ``score`` and ``snippet`` appear as ``relevance_score`` and ``content_snippet``.
    """

    marker: str
    position: int
    source_type: str
    source_id: str
    document_id: str | None
    url: str | None
    relevance_score: float | None = Field(validation_alias="score")
    content_snippet: str = Field(validation_alias="snippet")
    page: int | None = None
    """The 1-based PDF page of the cited passage; null when its document has no pages."""


class AnswerOut(BaseModel):
    """The JSON reply of a message: the same content the SSE stream carries."""

    conversation_id: str
    turn_id: str
    answer: str
    classification: str
    rewritten_query: str
    sources: list[SourceOut]
    citations: list[CitationOut]
    repetition_detected: bool
    no_answer: bool = False
    """Nothing in the workspace was relevant enough: the answer says so and cites nothing."""
    flags: dict[str, Any]
    timings_ms: dict[str, float]


class DocumentOut(BaseModel):
    id: str
    source: str
    title: str | None
    status: str
    error: str | None
    n_chunks: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> DocumentOut:
        """From a row of :meth:`Database.get_document` or :meth:`Database.list_documents`."""
        return cls(
            id=str(row["id"]),
            source=row["source"],
            title=row["title"],
            status=row["status"],
            error=row["error"],
            n_chunks=row["n_chunks"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | list[dict[str, Any]] | None = None


class ChatCompletionIn(BaseModel):
    model_config = ConfigDict(extra="allow")

    model: str = "convrag"
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    workspace_rag: RagOptions | None = Field(default=None, alias="rag")


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    postgres: bool
    milvus: bool
