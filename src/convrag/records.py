"""The records a turn is made of, one shape each from the store up to the HTTP schema.

- :class:`Source`: a passage numbered for an answer (a chunk, a looked-up document item,
  or a web page), as the graph carries it;
- :class:`StoredSource`: the same source as a stored turn keeps it (numbered, whether
  the answer cited it, without its text), written by ``persist`` and validated when a
  turn is read back;
- :class:`TurnMetadata`: what a stored turn keeps of its run beside the answer (flags,
  failed steps, rewrite method, regenerations, timings), validated alike;
- :class:`SourceOut`: the same source as clients see it, in the ``sources`` event, the
  JSON reply and the reply read back from the store, made in one place
  (:meth:`StoredSource.out`);
- :class:`Citation`: a resolved ``[n]`` marker, as the graph produces it, Postgres stores
  it (validated when read back, :func:`stored_citations`) and the API shows it;
- :class:`HistoryTurn`: an earlier turn, as the graph reads it back.

``typing_extensions.TypedDict`` lets pydantic (the HTTP schema) read them on Python 3.11.
A stored record that does not validate raises :class:`MalformedRecord`, naming the row
and the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, NotRequired

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

SourceType = Literal["chunk", "document", "web"]
SearchMode = Literal["hybrid", "dense", "bm25"]
"""Which lists a search runs: both fused, or the dense or the keyword list alone."""

Assurance = Literal["high", "low"]
"""How sure an answer (or its "not found") is: ``low`` when the decision was close."""


def assurance_of(flags: dict[str, object]) -> Assurance:
    """A turn's assurance from its flags (``low_confidence``)."""
    return "low" if flags.get("low_confidence") else "high"


SECTION_SEPARATOR = " › "
"""Between the headings of a passage's section path ("Spec › 2.12 Checking order")."""

SNIPPET_CHARS = 300
"""How much of a source's text clients see as its snippet."""


def section_path(heading: Sequence[str] | None, title: str | None) -> str | None:
    """The headings a passage sits under as one line ("Install › Linux"), less an opening
    heading that only repeats the document's title; None when there are none.

    It is shown with the source, and embedded and keyword-indexed with the passage (a
    contextual chunk header): a question that names a section finds its passages."""
    parts = [h for h in heading or () if h]
    if parts and title and parts[0].casefold() == title.casefold():
        parts = parts[1:]
    return SECTION_SEPARATOR.join(parts) or None


def snippet(text: str) -> str:
    """The start of a source's text that clients see: whole when short, else cut at the
    last space within :data:`SNIPPET_CHARS` (not inside a word) and ended with "…"."""
    if len(text) <= SNIPPET_CHARS:
        return text
    cut = text[: SNIPPET_CHARS - 1]
    space = cut.rfind(" ")
    if space > SNIPPET_CHARS * 2 // 3:
        cut = cut[:space]
    return cut.rstrip() + "…"


class Source(TypedDict):
    """One numbered source of an answer: a chunk, a looked-up document item, or a web page."""

    id: str
    """UUID of the chunk (or a UUID5 of the URL for web results)."""
    source_type: SourceType
    document_id: str | None
    title: str | None
    text: str
    url: str | None
    score: float
    dense_score: NotRequired[float | None]
    bm25_score: NotRequired[float | None]
    anchored: NotRequired[bool]
    rerank_score: NotRequired[float | None]
    """The reranker's score, when one rescored the candidates."""
    page: NotRequired[int | None]
    """The 1-based PDF page of the chunk; absent or None when the source has no pages."""
    section: NotRequired[str | None]
    """The headings the chunk sits under (:func:`section_path`); absent or None when its
    document has none."""


class Citation(TypedDict):
    """A resolved ``[n]`` marker: where it sits in the answer and what it points at."""

    marker: str
    position: int
    source_index: int
    source_id: str
    source_type: str
    document_id: str | None
    url: str | None
    score: float
    snippet: str
    page: NotRequired[int | None]
    """The 1-based PDF page of the cited chunk; absent or None when it has no pages."""


class HistoryTurn(TypedDict):
    """An earlier turn, as loaded from Postgres."""

    turn_number: int
    question: str
    answer: str
    contextualized_query: str | None
    entities: list[str]
    cited_document_ids: list[str]
    cited_chunk_ids: NotRequired[list[str]]
    """The passages the answer cited, in citation order (where a later turn looks in place
    before "not found")."""
    cited_titles: NotRequired[list[str]]
    """The titles of the documents the answer cited, in citation order: "this policy"
    in the next question names one of them."""


def previous_question(history: Sequence[HistoryTurn]) -> str | None:
    """The last turn's standalone question (as rewritten then), or None on a first turn."""
    if not history:
        return None
    return history[-1]["contextualized_query"] or history[-1]["question"]


class SourceOut(TypedDict):
    """A numbered source as clients see it: ``[n]`` in the answer points here."""

    n: int
    id: str
    type: str
    document_id: str | None
    title: str | None
    url: str | None
    score: float
    snippet: str
    page: NotRequired[int | None]
    """The 1-based PDF page of the passage; None when the source has no pages."""
    section: NotRequired[str | None]
    """The headings the passage sits under ("Install › Linux"); None when it has none."""


class StoredSource(BaseModel):
    """A numbered source as a stored turn keeps it (``conversation_turns.sources``, one
    JSON object each): what ``[n]`` in the answer pointed at and whether the answer
    cited it. Its text is not kept; a cited source's snippet is kept with its citation.

    Rows written before ``page`` and ``section`` were stored read as None for them."""

    model_config = ConfigDict(frozen=True)

    n: int
    """Its number in the answer, from 1."""
    id: str
    type: SourceType
    document_id: str | None = None
    title: str | None = None
    url: str | None = None
    score: float
    page: int | None = None
    section: str | None = None
    cited: bool = False
    """Whether a marker of the stored answer points at it."""

    @classmethod
    def of(cls, n: int, src: Source, *, cited: bool = False) -> StoredSource:
        """``src`` as source number ``n`` of an answer that ``cited`` it or not."""
        return cls(
            n=n,
            id=src["id"],
            type=src["source_type"],
            document_id=src["document_id"],
            title=src["title"],
            url=src["url"],
            score=float(src["score"]),
            page=src.get("page"),
            section=src.get("section"),
            cited=cited,
        )

    def out(self, snippet: str) -> SourceOut:
        """The source as clients see it, with ``snippet`` of its text."""
        return SourceOut(
            n=self.n,
            id=self.id,
            type=self.type,
            document_id=self.document_id,
            title=self.title,
            url=self.url,
            score=round(self.score, 6),
            snippet=snippet,
            page=self.page,
            section=self.section,
        )

    def source(self, text: str) -> Source:
        """The source as the graph carries it, with ``text`` for the text it was not
        stored with."""
        return Source(
            id=self.id,
            source_type=self.type,
            document_id=self.document_id,
            title=self.title,
            text=text,
            url=self.url,
            score=self.score,
            page=self.page,
            section=self.section,
        )


def source_out(n: int, src: Source) -> SourceOut:
    """``src`` as source number ``n``, with a short snippet of its text."""
    return StoredSource.of(n, src).out(snippet(src["text"]))


def sources_out(sources: list[Source]) -> list[SourceOut]:
    """Every source, numbered from 1."""
    return [source_out(n, s) for n, s in enumerate(sources, start=1)]


class TurnMetadata(BaseModel):
    """What a stored turn keeps of its run beside its answer (``conversation_turns.metadata``),
    as ``persist`` writes it; a turn not answered (yet) has none of it."""

    model_config = ConfigDict(frozen=True)

    flags: dict[str, Any] = {}
    """The flags it was answered with, as its ``done`` event carried them (an open set:
    ``no_answer``, ``repetition_unresolved``, ``web_search_triggered``, ...)."""
    errors: dict[str, str] = {}
    """The steps that failed and were answered without, each with why."""
    rewrite_method: str | None = None
    regenerations: int = 0
    timings_ms: dict[str, float] = {}


class MalformedRecord(RuntimeError):
    """A stored record that does not read as its type: the store holds something no
    version of the service wrote (edited by hand, or damaged). The service's fault, not
    the request's."""


_STORED_SOURCES = TypeAdapter(list[StoredSource])
_STORED_CITATIONS = TypeAdapter(list[Citation])
_METADATA = TypeAdapter(TurnMetadata)


def _problems(exc: ValidationError, item: str, whole: str) -> str:
    """What is wrong with a stored record, one ``place: why`` per problem (at most three):
    a record of a list by its position from 1 and its field ("source 2: id: Field
    required"), a field of one record by its name, the whole value as ``whole``."""
    shown = []
    for e in exc.errors()[:3]:
        first, *rest = e["loc"] or (whole,)
        place = [f"{item} {first + 1}" if isinstance(first, int) else str(first)]
        place += [".".join(map(str, rest))] if rest else []
        shown.append(": ".join([*place, e["msg"]]))
    more = exc.error_count() - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def stored_sources(value: object, *, turn_id: str) -> list[StoredSource]:
    """A turn's stored ``sources`` column as records; :class:`MalformedRecord` naming
    the turn, the source's position and the field when it does not validate."""
    try:
        return _STORED_SOURCES.validate_python(value)
    except ValidationError as exc:
        raise MalformedRecord(
            f"turn {turn_id}: malformed stored sources: {_problems(exc, 'source', 'sources')}"
        ) from exc


def stored_metadata(value: object, *, turn_id: str) -> TurnMetadata:
    """A turn's stored ``metadata`` column as its record; :class:`MalformedRecord` naming
    the turn and the field when it does not validate."""
    try:
        return _METADATA.validate_python(value)
    except ValidationError as exc:
        raise MalformedRecord(
            f"turn {turn_id}: malformed stored metadata: {_problems(exc, 'field', 'metadata')}"
        ) from exc


def stored_citations(value: object, *, message_id: str) -> list[Citation]:
    """An answer's stored citation rows as records; :class:`MalformedRecord` naming the
    answer, the citation's position and the field when one does not validate."""
    try:
        return _STORED_CITATIONS.validate_python(value)
    except ValidationError as exc:
        problems = _problems(exc, "citation", "citations")
        raise MalformedRecord(
            f"answer {message_id}: malformed stored citations: {problems}"
        ) from exc
