"""The sample source the tests share: as the graph holds it and, with its citation, as
clients see it. Each factory takes the fields a test needs to differ."""

from __future__ import annotations

from typing import Any, cast

from convrag.citations import resolve_citations
from convrag.records import Citation, Source, SourceOut, source_out


def source(**changes: Any) -> Source:
    """A chunk of a travel policy, on page 3 under "Meals › Abroad"."""
    sample = Source(
        id="8a1d0b62-5f7e-4c1a-9a43-1f1e0c2d3b4a",
        source_type="chunk",
        document_id="0c5e6b8e-2d4f-4e4b-8f3a-6a7b8c9d0e1f",
        title="Travel policy",
        text="Meals abroad are paid at the daily rate of the country visited.",
        url=None,
        score=0.8125,
        page=3,
        section="Meals › Abroad",
    )
    return cast(Source, {**sample, **changes})


def cited(answer: str, **changes: Any) -> tuple[SourceOut, Citation]:
    """:func:`source` (with ``changes``) as source ``[1]`` of ``answer``, as clients see
    it, and its citation by the ``[1]`` in ``answer``: made as a turn makes them
    (``resolve_citations``, the source's page given to its citation as ``persist`` does)."""
    src = source(**changes)
    _, citations, _ = resolve_citations(answer, [src])
    assert [c["marker"] for c in citations] == ["[1]"], answer
    return source_out(1, src), Citation(**citations[0], page=src.get("page"))
