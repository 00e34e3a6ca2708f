"""Request and response bodies of the HTTP API."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from convrag.graph.state import Citation

MAX_MESSAGE_CHARS = 8000


class RagOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    top_k: int = Field(default=5, ge=1, le=50)
    threshold: float = Field(
        default=0.0, ge=0.0, le=2.0, description="Minimum fused score of a vector hit."
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


class ConversationDetail(BaseModel):
    conversation_id: str
    turns: list[TurnOut]


class SourceOut(BaseModel):
    n: int
    id: str
    type: str
    document_id: str | None
    title: str | None
    url: str | None
    score: float
    snippet: str


class CitationOut(BaseModel):
    marker: str
    position: int
    source_type: str
    source_id: str
    document_id: str | None
    url: str | None
    relevance_score: float | None
    content_snippet: str

    @classmethod
    def from_state(cls, c: Citation) -> CitationOut:
        """From a citation of the graph's state."""
        return cls(marker=c["marker"], position=c["position"], source_type=c["source_type"],
                   source_id=c["source_id"], document_id=c["document_id"], url=c["url"],
                   relevance_score=c["score"], content_snippet=c["snippet"])


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
