"""In place: the passages around those the previous answer cited, weighed before "not found"."""

from __future__ import annotations

from pathlib import Path

from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.records import HistoryTurn
from convrag.retrieval.in_place import passages_in_place
from convrag.retrieval.planning import TurnQuery
from convrag.retrieval.policy import default_policy
from convrag.services import Services

_TOPICS = (
    "The parser reads the configuration file from the working directory at start-up.",
    "Timeouts default to thirty seconds; pass None to wait for ever.",
    "A failed match raises a timeout error that names the pattern it waited for.",
    "Logging goes to standard error unless a log file is given.",
    "The licence is MIT; see the LICENSE file for the full text.",
)


def _manual(tmp_path: Path) -> Path:
    """A manual of five sections, each long enough to be a chunk of its own."""
    path = tmp_path / "manual.md"
    path.write_text(
        "\n\n".join(
            f"## Section {i}\n\n" + " ".join([topic] * 12) for i, topic in enumerate(_TOPICS)
        )
    )
    return path


def _turn(workspace: str, message: str, documents: list[str], chunks: list[str]) -> TurnQuery:
    last = HistoryTurn(
        turn_number=1,
        question="How long does a match wait?",
        answer="Timeouts default to thirty seconds. [1]",
        contextualized_query=None,
        entities=[],
        cited_document_ids=documents,
        cited_chunk_ids=chunks,
    )
    return TurnQuery(
        workspace_id=workspace,
        message=message,
        query=message,
        classification="follow_up",
        method="rules",
        history=[last],
        anchor_document_ids=documents,
    )


async def test_the_passages_in_place_are_the_cited_one_and_its_neighbours_closest_first(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    await ingest_documents(services, workspace, load_path(_manual(tmp_path), max_bytes=10**6))
    chunks = await services.db.documents.chunk_rows(workspace)
    assert len(chunks) >= 5
    cited = next(c for c in chunks if "thirty seconds" in c.text)
    reach = default_policy().in_place_reach
    message = "What if nothing matches?"
    found = await passages_in_place(
        _turn(workspace, message, [cited.document_id], [cited.id]), services, message, reach
    )
    at = [c.id for c in chunks].index(cited.id)
    assert {s["id"] for s in found} == {c.id for c in chunks[max(0, at - reach) : at + reach + 1]}
    assert "failed match raises" in found[0]["text"]
    assert not any("licence is MIT" in s["text"] for s in found)
    cosines = [s["dense_score"] or 0.0 for s in found]
    assert cosines == sorted(cosines, reverse=True)


async def test_without_cited_passages_the_documents_opening_is_in_place(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    await ingest_documents(services, workspace, load_path(_manual(tmp_path), max_bytes=10**6))
    chunks = await services.db.documents.chunk_rows(workspace)
    turn = _turn(workspace, "What if nothing matches?", [chunks[0].document_id], [])
    found = await passages_in_place(turn, services, turn.message, 1)
    assert {s["id"] for s in found} == {c.id for c in chunks[:3]}


async def test_nothing_is_in_place_at_reach_zero_or_without_a_cited_document(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    await ingest_documents(services, workspace, load_path(_manual(tmp_path), max_bytes=10**6))
    chunks = await services.db.documents.chunk_rows(workspace)
    cited = _turn(workspace, "Why?", [chunks[0].document_id], [chunks[0].id])
    assert await passages_in_place(cited, services, "Why?", 0) == []
    assert await passages_in_place(_turn(workspace, "Why?", [], []), services, "Why?", 1) == []
