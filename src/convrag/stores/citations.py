"""What a stored answer cites: each ``[n]`` marker's source, written with the answer and
read back for the answer's citations and for its conversation's transcript."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from psycopg import AsyncConnection
from psycopg.rows import DictRow

from convrag.records import Citation, StoredSource, stored_citations
from convrag.stores.base import fetch_all


@dataclass(frozen=True, slots=True)
class CitedSource:
    """What one ``[n]`` marker of a stored answer cites, as an export lists it.

    ``title`` is the source's title when the answer was given (it survives the document's
    deletion), else its document's current title.
    """

    marker: str
    source_type: str
    title: str | None
    document_id: str | None
    page: int | None
    """The 1-based PDF page of the cited passage; None when its document has no pages."""
    url: str | None
    snippet: str

    def titled(self, stored: StoredSource | None) -> CitedSource:
        """This source with the title that the answer's ``stored`` source had when the
        answer was given, if it had one."""
        if stored is None or stored.title is None:
            return self
        return replace(self, title=stored.title)


async def insert_citations(
    conn: AsyncConnection[DictRow],
    workspace_id: str,
    message_id: str,
    citations: Sequence[Citation],
) -> None:
    """Store the resolved citations of the answer ``message_id`` (a turn), on ``conn``:
    in the transaction that writes the answer."""
    if not citations:
        return
    async with conn.cursor() as cur:
        await cur.executemany(
            """INSERT INTO message_citations
                 (workspace_id, message_id, citation_marker, position_in_response,
                  source_type, source_id, relevance_score, content_snippet,
                  source_url, document_id, page)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)""",
            [
                (
                    workspace_id,
                    message_id,
                    c["marker"],
                    c["position"],
                    c["source_type"],
                    c["source_id"],
                    c["score"],
                    c["snippet"],
                    c["url"],
                    c["document_id"],
                    c.get("page"),
                )
                for c in citations
            ],
        )


async def answer_citations(
    conn: AsyncConnection[DictRow], workspace_id: str, message_id: str
) -> list[Citation]:
    """The stored citations of one answer, in the order they stand in it."""
    rows = await fetch_all(
        conn,
        """SELECT citation_marker AS marker, position_in_response AS position,
                  substring(citation_marker from '[0-9]+')::int AS source_index,
                  source_id::text AS source_id, source_type,
                  document_id::text AS document_id, source_url AS url,
                  relevance_score AS score,
                  coalesce(content_snippet, '') AS snippet, page
           FROM message_citations WHERE workspace_id = %s AND message_id = %s
           ORDER BY position_in_response""",
        (workspace_id, message_id),
    )
    return stored_citations(rows, message_id=message_id)


async def conversation_cited_sources(
    conn: AsyncConnection[DictRow], workspace_id: str, conversation_id: str
) -> list[tuple[str, int, CitedSource]]:
    """``(message_id, n, source)`` for each distinct marker ``[n]`` of each answer of the
    conversation, in order of the marker's first appearance in its answer; each
    source's title is its document's (:meth:`CitedSource.titled` gives the one the
    answer's stored source ``n`` had)."""
    rows = await fetch_all(
        conn,
        """SELECT DISTINCT ON (mc.message_id, mc.citation_marker)
                  mc.message_id::text AS message_id,
                  mc.position_in_response AS position,
                  mc.citation_marker AS marker, mc.source_type,
                  substring(mc.citation_marker from '[0-9]+')::int AS source_index,
                  d.title AS title,
                  mc.document_id::text AS document_id, mc.page,
                  mc.source_url AS url,
                  coalesce(mc.content_snippet, '') AS snippet
           FROM message_citations mc
           JOIN conversation_turns t ON t.id = mc.message_id
           LEFT JOIN documents d
             ON d.id = mc.document_id AND d.workspace_id = mc.workspace_id
           WHERE mc.workspace_id = %s AND t.conversation_id = %s
           ORDER BY mc.message_id, mc.citation_marker,
                    mc.position_in_response""",
        (workspace_id, conversation_id),
    )
    cited = []
    for r in sorted(rows, key=lambda r: r["position"] or 0):
        message_id, n = r.pop("message_id"), r.pop("source_index")
        r.pop("position")
        cited.append((message_id, n, CitedSource(**r)))
    return cited
