"""Request and response bodies of the HTTP API.

Responses are validated from the store's records (``Model.model_validate(record)``,
``from_attributes``), so each concept has one record and one schema, and no route copies
fields by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    model_validator,
)

from convrag.records import Assurance, SourceOut
from convrag.stores.citations import CitedSource
from convrag.stores.documents import ingest_pace

MAX_MESSAGE_CHARS = 8000
MODEL_ID = "convrag"
"""The one model the OpenAI-compatible endpoint serves: the workspace's conversational RAG."""
MAX_IDEMPOTENCY_KEY_CHARS = 200
"""The longest ``Idempotency-Key`` header or ``client_message_id`` a message may carry."""
MAX_TITLE_CHARS = 200
MAX_COMMENT_CHARS = 2000


NO_CONTROL_CHARACTERS = "must not contain control characters (such as NUL or a newline)"


def has_control_characters(value: str) -> bool:
    """Whether ``value`` holds a control character (C0 or C1: NUL, a newline, a tab)."""
    return any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value)


def _no_control_characters(value: str) -> str:
    """``value`` if it has no control characters; Postgres cannot store NUL, and a
    title or a key is one line."""
    if has_control_characters(value):
        raise ValueError(NO_CONTROL_CHARACTERS)
    return value


def _plain_text(value: str) -> str:
    """``value`` if it has no control characters other than tabs and line breaks:
    Postgres cannot store NUL, and the others are no one's text."""
    if any((ord(c) < 0x20 and c not in "\t\n\r") or 0x7F <= ord(c) < 0xA0 for c in value):
        raise ValueError("must not contain control characters other than tabs and newlines")
    return value


def _key(value: str | None) -> str | None:
    """An idempotency key, refused as :func:`_no_control_characters` refuses."""
    return None if value is None else _no_control_characters(value)


def _comment(value: str | None) -> str | None:
    """A comment stripped, None when blank; refused as :func:`_plain_text` refuses."""
    if value is None:
        return None
    return _plain_text(value).strip() or None


class ErrorOut(BaseModel):
    """A 4xx answer: ``detail`` says what is wrong and, where there is one, the fix."""

    detail: str


class FieldProblem(BaseModel):
    field: str
    """Where: ``query.cursor``, ``title``, ... (empty for a body that is not JSON)."""
    message: str
    type: str


class ValidationErrorOut(BaseModel):
    """A 422 answer: one readable line, then the problems field by field."""

    detail: str
    errors: list[FieldProblem] = Field(default_factory=list)


class OpenAIErrorObject(BaseModel):
    """OpenAI's ``error`` object: what OpenAI clients read from an error answer."""

    message: str
    type: str
    """``invalid_request_error``, ``requests`` (the rate limit) or ``server_error``."""
    param: str | None = None
    """The request field at fault (``n``, ``messages[0].content``), if one is."""
    code: str | None = None
    """``invalid_api_key``, ``rate_limit_exceeded``, ``unsupported_value``, ..."""


class OpenAIErrorOut(BaseModel):
    """An error answer of the OpenAI-compatible routes: OpenAI's ``error`` object, and
    the ``detail`` (the same message) that every other route answers; a refused body
    also lists its ``errors`` field by field."""

    error: OpenAIErrorObject
    detail: str
    errors: list[FieldProblem] | None = None


def openai_route_responses(
    described: Mapping[int | str, str] | None = None,
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` of an OpenAI-compatible route: its own errors
    (``described``), the key's 401, 429 and 503 of every ``/v1`` route, and any other 4xx
    (documented as ``4XX``, which also keeps FastAPI from documenting a 422 that these
    routes never send: they answer 400), all as :class:`OpenAIErrorOut`."""
    every: dict[int | str, str] = {
        **(described or {}),
        401: "No API key, or one that is invalid or revoked (`code: invalid_api_key`).",
        429: "The key's requests per minute (`RATE_LIMIT_PER_MINUTE`) are used up "
        "(`code: rate_limit_exceeded`); `Retry-After` says when to retry.",
        503: "A store is unavailable or restarting; `Retry-After` says when to retry.",
        "4XX": "Any other client error, in the same shape.",
    }
    return {code: {"model": OpenAIErrorOut, "description": text} for code, text in every.items()}


def error_responses(
    described: Mapping[int, str], *, plain_route: bool = False
) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for a route's 4xx answers, each with its JSON body's schema.

    FastAPI documents a response ``model`` under the route's own media type; a route
    that answers ``text/plain`` (``plain_route``) still sends its errors as JSON, so
    there the schemas are referenced under ``application/json`` instead (the JSON
    routes register them as components).
    """
    out: dict[int | str, dict[str, Any]] = {}
    for code, text in described.items():
        model = ValidationErrorOut if code == 422 else ErrorOut
        if plain_route:
            ref = {"$ref": f"#/components/schemas/{model.__name__}"}
            out[code] = {"description": text, "content": {"application/json": {"schema": ref}}}
        else:
            out[code] = {"model": model, "description": text}
    return out


def keyed_route_responses() -> dict[int | str, dict[str, Any]]:
    """The answers every ``/v1`` route may give before its own code runs: no valid API
    key (401), the key's rate limit (429, with ``Retry-After``), a store down or
    restarting (503, with ``Retry-After``). Declared once per router."""
    return error_responses(
        {
            401: "No API key, or one that is invalid or revoked.",
            429: "The key's requests per minute (`RATE_LIMIT_PER_MINUTE`) are used up; "
            "`Retry-After` says when to retry.",
            503: "A store is unavailable or restarting; `Retry-After` says when to retry.",
        }
    )


def _not_a_boolean(value: Any) -> Any:
    """``value`` unless it is ``true`` or ``false``: pydantic reads a boolean as the number
    1 or 0, so ``rag.threshold: false`` was taken as 0.0 and ``top_k: true`` as 1, where the
    client surely meant something else."""
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not the boolean {str(value).lower()}")
    return value


Number = BeforeValidator(_not_a_boolean)
"""Put on a numeric field of a request: a boolean is refused (422 naming the field)."""


class RagOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    top_k: Annotated[int, Number] = Field(default=5, ge=1, le=50)
    threshold: Annotated[float, Number] = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="Minimum relevance of a passage: its cosine similarity to the query.",
    )
    web_search: Literal["auto", "off", "on"] = "auto"


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: Annotated[
        str, Field(min_length=1, max_length=MAX_MESSAGE_CHARS), AfterValidator(_plain_text)
    ]
    rag: RagOptions = Field(default_factory=RagOptions)
    client_message_id: Annotated[
        str | None,
        Field(min_length=1, max_length=MAX_IDEMPOTENCY_KEY_CHARS),
        AfterValidator(_key),
    ] = None
    """The client's id of this message, as the ``Idempotency-Key`` header: a retry with
    the same one answers the same turn instead of asking again."""


class ConversationOut(BaseModel):
    conversation_id: str


Title = Annotated[
    str,
    Field(min_length=1, max_length=MAX_TITLE_CHARS),
    AfterValidator(_no_control_characters),
]
"""A conversation's name: 1 to 200 characters once surrounding spaces are stripped, one line."""


class ConversationRename(BaseModel):
    """The body of ``PATCH /v1/conversations/{id}``."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    title: Title
    """The new name."""


class ConversationCreate(BaseModel):
    """The optional body of ``POST /v1/conversations``."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    title: Title | None = None
    """A name for the conversation; without one it is named by its first question."""


class ConversationSummary(BaseModel):
    """A conversation as listed (a
    :class:`~convrag.stores.records.ConversationRecord`)."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    title: str | None
    """The name it was given, else its first question (at most 80 characters); null for
    a conversation with neither."""
    created_at: datetime
    updated_at: datetime
    """The last activity: creation or its latest turn."""
    turn_count: int


class ConversationPage(BaseModel):
    """One page of conversations, most recently active first."""

    conversations: list[ConversationSummary]
    next_cursor: str | None
    """Pass as ``cursor`` for the next page; null on the last page."""


class FeedbackIn(BaseModel):
    """The body of ``POST /v1/messages/{id}/feedback``."""

    model_config = ConfigDict(extra="forbid")

    rating: Literal["up", "down"]
    comment: Annotated[
        str | None,
        Field(max_length=MAX_COMMENT_CHARS),
        AfterValidator(_comment),
    ] = None
    """Optional free text, at most 2,000 characters; blank counts as none."""


class StopOut(BaseModel):
    """The answer to a stop: whether a running answer was stopped, and its turn."""

    conversation_id: str
    stopped: bool
    """False when no worker was answering anything in the conversation."""
    turn_id: str | None = None
    """The stopped turn, now stored ``failed``."""


class FeedbackOut(BaseModel):
    """A stored rating (from a :class:`~convrag.stores.feedback.FeedbackRecord`)."""

    model_config = ConfigDict(from_attributes=True)

    message_id: str
    rating: Literal["up", "down"]
    comment: str | None
    created_at: datetime


class TurnOut(BaseModel):
    """A stored turn (from a :class:`~convrag.stores.records.TurnRecord`)."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    turn_number: int
    question: str
    answer: str
    contextualized_query: str | None
    repetition_detected: bool
    web_search_triggered: bool
    created_at: datetime
    status: Literal["processing", "done", "failed"] = "done"
    """``processing`` while it is answered, ``failed`` (with ``error``) when it could not be."""
    error: str | None = None
    feedback: FeedbackOut | None = None
    """The user's rating of this answer, if any."""
    no_answer: bool = False
    """The answer was the "not found" one: nothing in the workspace was relevant enough."""
    confidence: Assurance = Field(default="high", validation_alias="assurance")
    """How sure the answer (or its "not found") is: ``low`` when the decision was close."""
    flags: dict[str, Any] = Field(default_factory=dict)
    """The flags the answer was given with, as its ``done`` event carried them:
    ``no_answer``, ``repetition_unresolved`` (it still repeats an earlier answer),
    ``web_search_triggered``, ..."""


class ConversationDetail(BaseModel):
    conversation_id: str
    turns: list[TurnOut]


class ExportedTurn(TurnOut):
    """A turn in an export: the stored turn and what each of its markers cites."""

    citations: list[CitedSource] = Field(validation_alias="cited_sources")


class ConversationExport(BaseModel):
    """A whole conversation (a :class:`~convrag.stores.records.Transcript`)."""

    model_config = ConfigDict(from_attributes=True)

    conversation: ConversationSummary
    turns: list[ExportedTurn]


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
    confidence: Assurance = "high"
    """How sure the answer (or its "not found") is: ``low`` when the "not found" model's
    probability was close to its threshold (``confidence_margin``), so it could have gone
    the other way."""
    flags: dict[str, Any]
    timings_ms: dict[str, float]


def shown_source(row: Any) -> Any:
    """A document row with the ``source`` that clients see: a file ingested from the
    server's disk (``convrag ingest``) by its file name, not its absolute path, which
    tells every API key holder how the server's disk is laid out. The stored source (the
    document's identity, which a re-ingest matches) is unchanged; an upload
    (``upload:NAME``) and a record's ``_id`` are shown as they are."""
    if not isinstance(row, Mapping):
        return row
    source = row.get("source")
    metadata = row.get("metadata")
    from_file = isinstance(metadata, Mapping) and metadata.get("path") == source
    if isinstance(source, str) and (from_file or source.startswith("/")):
        return {**row, "source": PurePath(source).name or source}
    return row


class DocumentOut(BaseModel):
    """A document's row (of :meth:`~convrag.stores.documents.DocumentStore.get_document`
    or :meth:`~convrag.stores.documents.DocumentStore.list_documents`), its source as
    :func:`shown_source` shows it."""

    id: Annotated[str, BeforeValidator(str)]
    source: str
    """An ingested file's name, an upload's ``upload:NAME`` or a record's ``_id``."""
    title: str | None
    status: str
    error: str | None
    n_chunks: int
    """Its chunks; while ``processing``, the chunks embedded so far."""
    chunks_total: int = 0
    """How many chunks it has (while ``processing``, 0 until they are counted)."""
    chunks_per_s: float | None = None
    """An upload's ingest rate: chunks embedded per second since its embedding began (while
    ``processing``, up to now; once ``ready``, the whole ingest's). None until its first
    slice is embedded, for a failed upload, and for a document ingested by the CLI."""
    eta_s: float | None = None
    """Seconds the rest of a ``processing`` upload should take at ``chunks_per_s``; 0 once
    ``ready``; None where the rate is unknown."""
    created_at: datetime
    updated_at: datetime

    @model_validator(mode="before")
    @classmethod
    def _from_row(cls, row: Any) -> Any:
        """The row's shown source and its ingest's pace (:func:`ingest_pace`), now."""
        if isinstance(row, Mapping) and "chunks_per_s" not in row:
            pace = ingest_pace(row, datetime.now(UTC))
            row = {**row, "chunks_per_s": pace.chunks_per_s, "eta_s": pace.eta_s}
        return shown_source(row)


UPLOAD_LISTED = 100
"""The most documents an upload's answer lists: a ``.jsonl`` file may hold 200,000."""


class UploadOut(DocumentOut):
    """The answer to an upload: the first document it created, as before, and the first
    :data:`UPLOAD_LISTED` of them in ``documents`` (a ``.jsonl`` file makes one per
    record); ``n_documents`` counts them all, which ``GET /v1/documents`` lists."""

    documents: list[DocumentOut]
    n_documents: int


def _chat_content(
    value: str | list[dict[str, Any]] | None,
) -> str | list[dict[str, Any]] | None:
    """A message's text, whole or in ``text`` parts, refused as :func:`_plain_text` refuses."""
    for p in [] if isinstance(value, str) else value or []:
        if p.get("type") == "text" and not isinstance(p.get("text"), str):
            raise ValueError(f"a text part's 'text' must be a string, got {p.get('text')!r:.40}")
    parts = [value] if isinstance(value, str) else [p.get("text") for p in value or []]
    for part in parts:
        if isinstance(part, str):
            _plain_text(part)
    return value


def _content_shape(value: Any) -> Any:
    """A message's ``content`` refused in one line when it is neither text nor a list of
    parts (pydantic would name each member of the union it tried)."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        raise ValueError(
            "must be a string or a list of parts such as {'type': 'text', 'text': '...'}"
        )
    return value


class ChatMessage(BaseModel):
    """One message of ``messages``; its other fields (``name``, ``tool_calls``,
    ``tool_call_id``, ...) are accepted and ignored."""

    role: Literal["system", "user", "assistant", "tool", "developer", "function"]
    content: Annotated[
        str | list[dict[str, Any]] | None,
        BeforeValidator(_content_shape),
        AfterValidator(_chat_content),
    ] = None


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")

    include_usage: bool | None = False
    """Send a last chunk with ``usage`` (and no choices) before ``[DONE]``, as OpenAI does."""


class ChatCompletionIn(BaseModel):
    """The body of ``POST /v1/chat/completions``: OpenAI's, of which only ``messages``,
    ``stream`` and ``stream_options`` change the answer. Any other field is accepted and
    ignored (``temperature``, ``max_tokens``, ``stop``, ``user``, ...), except the few
    that ask for what this endpoint cannot give (a 400 says which): more than one
    choice, a tool call, JSON output or audio. ``null`` counts as not sent."""

    model_config = ConfigDict(extra="allow")

    model: str | None = Field(default=MODEL_ID, description="Any name: the reply repeats it.")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    workspace_rag: RagOptions | None = Field(default=None, alias="rag")
    n: Annotated[int | None, Number] = Field(
        default=1, ge=1, description="One choice per request: only 1."
    )
    tool_choice: str | dict[str, Any] | None = Field(
        default=None, description="`auto` or `none`: no tool is ever called."
    )
    function_call: str | dict[str, Any] | None = Field(
        default=None, description="`auto` or `none`: no function is ever called."
    )
    response_format: dict[str, Any] | None = Field(
        default=None, description="`{type: text}` only: the answer is prose with citations."
    )
    modalities: list[str] | None = Field(default=None, description="`[text]` only.")
    audio: dict[str, Any] | None = Field(default=None, description="Not supported: omit it.")


class UsageOut(BaseModel):
    """Tokens the turn's LLM calls reported (rewrite, answer, regenerations), summed; 0
    when no LLM ran or it reported none."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    postgres: bool
    milvus: bool
    disk: bool
    """Whether the data directory's disk has room (``MIN_FREE_BYTES`` free or more)."""
    detail: str | None = None
    """What is wrong, when ``status`` is ``degraded``."""


class WorkspaceOut(BaseModel):
    """The workspace an API key belongs to: a client (the chat page) names it to the
    user, who may hold keys of several."""

    workspace: str
    """The workspace id, as ``convrag keys create -w`` and ``convrag serve --docs`` name it."""
