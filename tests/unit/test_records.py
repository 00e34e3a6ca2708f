"""The records of a turn: a stored source (and a turn's metadata, and a citation) read back
from its JSON row as written, shown as the live one is, and a malformed row refused naming
the turn, the record and the field."""

from __future__ import annotations

import json

import pytest

from convrag.records import (
    Citation,
    MalformedRecord,
    StoredSource,
    TurnMetadata,
    source_out,
    stored_citations,
    stored_metadata,
    stored_sources,
)
from tests import samples

#: A turn's ``sources`` column as ``persist`` wrote it before the records were typed: the
#: JSON that rows in existing databases hold, and that ``persist`` must go on writing.
STORED_ROW = (
    '[{"n": 1, "id": "8a1d0b62-5f7e-4c1a-9a43-1f1e0c2d3b4a", "type": "chunk", '
    '"document_id": "0c5e6b8e-2d4f-4e4b-8f3a-6a7b8c9d0e1f", "title": "Travel policy", '
    '"url": null, "score": 0.8125, "page": 3, "section": "Meals \\u203a Abroad", '
    '"cited": true}, '
    '{"n": 2, "id": "5e0c3f0e-9b2a-5d7c-8e1f-2a3b4c5d6e7f", "type": "web", '
    '"document_id": null, "title": "Per diem rates", "url": "https://example.org/rates", '
    '"score": 0.25, "page": null, "section": null, "cited": false}]'
)

#: A row written before pages and sections were stored.
OLD_ROW = (
    '[{"n": 1, "id": "c1", "type": "document", "document_id": "d1", "title": "Leave", '
    '"url": null, "score": 1.0, "cited": true}]'
)


def test_a_stored_source_row_reads_back_and_is_written_again_as_the_same_json() -> None:
    row = json.loads(STORED_ROW)
    sources = stored_sources(row, turn_id="t1")
    assert [s.n for s in sources] == [1, 2]
    assert sources[0].cited and sources[0].page == 3 and sources[1].url is not None
    assert json.dumps([s.model_dump() for s in sources]) == STORED_ROW


def test_persist_writes_a_source_as_the_stored_row_has_it() -> None:
    stored = StoredSource.of(1, samples.source(), cited=True)
    assert json.dumps(stored.model_dump()) == json.dumps(json.loads(STORED_ROW)[0])


def test_a_row_written_before_pages_and_sections_reads_with_none_for_them() -> None:
    (source,) = stored_sources(json.loads(OLD_ROW), turn_id="t1")
    assert (source.page, source.section, source.cited) == (None, None, True)


def test_a_stored_source_is_shown_as_the_live_one_with_the_snippet_given() -> None:
    src = samples.source(score=0.123456789)
    stored = StoredSource.of(2, src)
    assert stored.out(snippet="Meals abroad") == {**source_out(2, src), "snippet": "Meals abroad"}
    assert stored.out("")["score"] == 0.123457


def test_a_stored_source_gives_the_graph_its_source_back_with_the_text_given() -> None:
    src = samples.source()
    assert StoredSource.of(1, src).source(src["text"]) == src


@pytest.mark.parametrize(
    ("row", "named"),
    [
        ('[{"n": 1, "type": "chunk", "score": 0.5}]', "source 1: id: Field required"),
        (
            OLD_ROW[:-1] + ', {"n": 2, "id": "c2", "type": "chunk", "score": "high"}]',
            "source 2: score: Input should be a valid number",
        ),
        ('[{"n": 1, "id": "c1", "type": "memory", "score": 0.5}]', "source 1: type: Input"),
        ('{"n": 1}', "sources: Input should be a valid list"),
    ],
)
def test_a_malformed_stored_source_is_refused_naming_the_turn_the_source_and_the_field(
    row: str, named: str
) -> None:
    with pytest.raises(MalformedRecord, match=r"^turn t9: malformed stored sources: ") as raised:
        stored_sources(json.loads(row), turn_id="t9")
    assert named in str(raised.value)


def _citation_row(**changes: object) -> dict[str, object]:
    """A citation as ``answer_citations`` selects it."""
    row: dict[str, object] = {
        "marker": "[1]",
        "position": 12,
        "source_index": 1,
        "source_id": "8a1d0b62-5f7e-4c1a-9a43-1f1e0c2d3b4a",
        "source_type": "chunk",
        "document_id": None,
        "url": None,
        "score": 0.5,
        "snippet": "Meals abroad are paid",
        "page": None,
    }
    return {**row, **changes}


def test_stored_citation_rows_read_back_as_citations() -> None:
    cited: list[Citation] = stored_citations([_citation_row()], message_id="m1")
    assert cited == [_citation_row()]


def test_a_malformed_stored_citation_is_refused_naming_the_answer_and_the_field() -> None:
    rows = [_citation_row(), _citation_row(position=None)]
    with pytest.raises(MalformedRecord, match=r"^answer m1: .*citation 2: position: "):
        stored_citations(rows, message_id="m1")


#: A turn's ``metadata`` column as ``persist`` writes it.
METADATA_ROW = (
    '{"flags": {"no_answer": false, "unresolved_markers": 0, "links_removed": 1}, '
    '"errors": {"web_search": "timeout"}, "rewrite_method": "rules", "regenerations": 1, '
    '"timings_ms": {"synthesize": 812.25, "persist": 3.5}}'
)


def test_a_turns_stored_metadata_reads_back_and_is_written_again_as_the_same_json() -> None:
    metadata = stored_metadata(json.loads(METADATA_ROW), turn_id="t1")
    assert metadata.regenerations == 1 and metadata.errors == {"web_search": "timeout"}
    assert json.dumps(metadata.model_dump()) == METADATA_ROW


def test_a_turn_not_answered_has_empty_metadata() -> None:
    assert stored_metadata({}, turn_id="t1") == TurnMetadata()


def test_malformed_stored_metadata_is_refused_naming_the_turn_and_the_field() -> None:
    row = {**json.loads(METADATA_ROW), "regenerations": "twice"}
    with pytest.raises(MalformedRecord, match=r"^turn t2: .*regenerations: Input should be"):
        stored_metadata(row, turn_id="t2")
