"""The records a turn is made of, one shape each from the store up to the HTTP schema.

- :class:`Source`: a passage numbered for an answer (a chunk, a looked-up document item,
  or a web page), as the graph carries it;
- :class:`SourceOut`: the same source as clients see it, in the ``sources`` event, the
  JSON reply and the stored turn;
- :class:`Citation`: a resolved ``[n]`` marker, as the graph produces it, Postgres stores
  it and the API shows it;
- :class:`HistoryTurn`: an earlier turn, as the graph reads it back.

``typing_extensions.TypedDict`` lets pydantic (the HTTP schema) read them on Python 3.11.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NotRequired

from typing_extensions import TypedDict

SourceType = Literal["chunk", "document", "web"]
SearchMode = Literal["hybrid", "dense", "bm25"]
"""Which lists a search runs: both fused, or the dense or the keyword list alone."""

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


def source_out(n: int, src: Source) -> SourceOut:
    """``src`` as source number ``n``, with a short snippet of its text."""
    return SourceOut(
        n=n,
        id=src["id"],
        type=src["source_type"],
        document_id=src["document_id"],
        title=src["title"],
        url=src["url"],
        score=round(float(src["score"]), 6),
        snippet=snippet(src["text"]),
        page=src.get("page"),
        section=src.get("section"),
    )


def sources_out(sources: list[Source]) -> list[SourceOut]:
    """Every source, numbered from 1."""
    return [source_out(n, s) for n, s in enumerate(sources, start=1)]
