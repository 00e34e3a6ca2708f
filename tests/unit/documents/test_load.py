"""Reading files into documents: JSONL records, clear errors on bad input, size limits,
directories."""

from __future__ import annotations

import gzip
import io
import json
import tracemalloc
from pathlib import Path

import pytest

from convrag.documents.base import IngestError
from convrag.documents.load import expand_paths, load_path
from tests.documents.samples import docx_bytes, write


def test_jsonl_corpus_records_become_documents(docs_dir: Path) -> None:
    p = write(
        docs_dir,
        "c.jsonl",
        '{"_id": "p1", "title": "T", "text": "alpha"}\n'
        '{"_id": "p2", "title": "U", "text": "beta"}\n',
    )
    docs = load_path(p, max_bytes=10**6)
    assert [(d.source, d.title, d.text) for d in docs] == [
        ("p1", "T", "alpha"),
        ("p2", "U", "beta"),
    ]


def test_a_50mb_file_is_refused_with_the_limit_named(docs_dir: Path) -> None:
    path = docs_dir / "huge.txt"
    with open(path, "wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    with pytest.raises(IngestError, match=r"50\.0 MiB is over the 20\.0 MiB limit"):
        load_path(path, max_bytes=20 * 1024 * 1024)


def test_a_directory_ingest_takes_docx_and_skips_what_it_cannot_read(docs_dir: Path) -> None:
    (docs_dir / "guide.docx").write_bytes(docx_bytes())
    (docs_dir / "~$guide.docx").write_bytes(b"lock file of an open document")
    (docs_dir / "deck.pptx").write_bytes(b"PK\x03\x04")
    (docs_dir / ".DS_Store").write_bytes(b"\x00")
    skipped: list[Path] = []
    assert expand_paths([docs_dir], skipped) == [docs_dir / "guide.docx"]
    assert skipped == [docs_dir / "deck.pptx"]


def _gzip_of(piece: bytes, times: int) -> bytes:
    """``piece`` repeated ``times`` times, gzipped a piece at a time (the test never holds
    the expanded content)."""
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as gz:
        for _ in range(times):
            gz.write(piece)
    return out.getvalue()


@pytest.mark.parametrize(
    ("piece", "times"),
    [
        (b"\x00" * 2**20, 256),  # 256 MiB of zero bytes, one endless "line"
        (b'{"_id": "p", "title": "T", "text": "the same record again"}\n' * 1000, 1000),
    ],
    ids=["zero-bytes", "repeated-lines"],
)
def test_a_gzip_bomb_stops_at_max_decompressed_bytes_with_memory_bounded(
    docs_dir: Path, piece: bytes, times: int
) -> None:
    path = docs_dir / "bomb.jsonl.gz"
    path.write_bytes(_gzip_of(piece, times))
    assert path.stat().st_size < 2**20  # well under MAX_FILE_BYTES: only expansion is big
    limit = 4 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(IngestError) as info:
            load_path(path, max_bytes=20 * 2**20, max_decompressed_bytes=limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    message = str(info.value)
    assert "bomb.jsonl.gz" in message
    assert "decompresses to over the 4.0 MiB limit" in message
    assert "MAX_DECOMPRESSED_BYTES" in message
    # Decompression stopped at the limit: nowhere near the 256+ MiB it expands to.
    assert peak < 8 * limit, f"peak {peak / 2**20:.1f} MiB"


def test_an_endless_jsonl_record_stops_at_the_file_limit_before_the_decompressed_one(
    docs_dir: Path,
) -> None:
    path = docs_dir / "line.jsonl.gz"
    path.write_bytes(_gzip_of(b"a" * 2**20, 64))  # one 64 MiB line
    tracemalloc.start()
    try:
        with pytest.raises(IngestError, match=r"line\.jsonl\.gz:1: a record over the 2\.0 MiB"):
            load_path(path, max_bytes=2 * 2**20, max_decompressed_bytes=256 * 2**20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"


def test_a_jsonl_file_over_the_record_limit_is_refused_naming_the_setting(
    docs_dir: Path,
) -> None:
    path = docs_dir / "many.jsonl.gz"
    lines = "".join(f'{{"_id": "p{i}", "text": "a"}}\n' for i in range(1001))
    path.write_bytes(_gzip_of(lines.encode(), 1))
    with pytest.raises(IngestError, match=r"over 1000 records.*MAX_RECORDS_PER_FILE"):
        load_path(path, max_bytes=2**20, max_records=1000)
    assert len(load_path(path, max_bytes=2**20, max_records=1001)) == 1001


def test_html_nested_thousands_deep_is_read_not_a_crash(docs_dir: Path) -> None:
    depth = 20_000
    path = write(docs_dir, "deep.html", "<div>" * depth + "deep text" + "</div>" * depth)
    assert "deep text" in load_path(path, max_bytes=2**20)[0].text


def test_an_html_page_of_more_tags_than_the_cap_can_parse_is_refused(docs_dir: Path) -> None:
    path = write(docs_dir, "tags.html", "<p>x</p>" * 1000)  # 2,000 tags: about 2 MiB parsed
    with pytest.raises(IngestError, match=r"2000 tags would take over the 1\.0 MiB limit"):
        load_path(path, max_bytes=2**20, max_decompressed_bytes=2**20)
    assert load_path(path, max_bytes=2**20, max_decompressed_bytes=4 * 2**20)[0].text


def test_a_jsonl_gz_under_the_decompressed_limit_loads_line_by_line(docs_dir: Path) -> None:
    lines = [
        '{"_id": "p1", "title": "T", "text": "alpha\u2028still alpha"}',
        "",
        '{"_id": "p2", "title": "U", "text": "beta"}',
    ]
    path = docs_dir / "corpus.jsonl.gz"
    path.write_bytes(_gzip_of("\n".join(lines).encode("utf-8-sig"), 1))
    docs = load_path(path, max_bytes=10**6, max_decompressed_bytes=10**6)
    assert [(d.source, d.text) for d in docs] == [("p1", "alpha\u2028still alpha"), ("p2", "beta")]
    exact = len("\n".join(lines).encode("utf-8-sig"))
    assert len(load_path(path, max_bytes=10**6, max_decompressed_bytes=exact)) == 2
    with pytest.raises(IngestError, match=f"over the {exact - 1} byte limit"):
        load_path(path, max_bytes=10**6, max_decompressed_bytes=exact - 1)


def test_a_truncated_gzip_is_named_as_not_valid(docs_dir: Path) -> None:
    path = docs_dir / "cut.jsonl.gz"
    path.write_bytes(_gzip_of(b'{"_id": "p", "text": "x"}\n' * 1000, 1)[:-20])
    with pytest.raises(IngestError, match=r"cut\.jsonl\.gz: not a valid gzip file"):
        load_path(path, max_bytes=10**6, max_decompressed_bytes=10**6)


def test_a_binary_file_named_txt_is_called_binary_not_given_iconv_advice(tmp_path: Path) -> None:
    blob = tmp_path / "photo.txt"
    blob.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(IngestError, match="binary file, not text") as info:
        load_path(blob, max_bytes=10**6)
    assert "iconv" not in str(info.value)


def test_a_markdown_file_is_titled_by_its_opening_heading_else_its_file_name(
    docs_dir: Path,
) -> None:
    titled = docs_dir / "leave_policy.md"
    titled.write_text("\n# Leave policy #\n\nEvery employee gets 25 days.\n")
    plain = docs_dir / "notes.md"
    plain.write_text("Some notes.\n\n# Later heading\n")
    assert load_path(titled, max_bytes=10**6)[0].title == "Leave policy"
    assert load_path(plain, max_bytes=10**6)[0].title == "notes"


def test_every_file_format_is_read_in_plain_typography_titles_included(docs_dir: Path) -> None:
    """A ligature reads as its letters, a no-break space as a space, a soft hyphen as
    nothing, whatever the format; "²" and "…" stay."""
    import docx

    document = docx.Document()
    document.core_properties.title = "Of\ufb01ce rules"
    document.add_paragraph("The \ufb01les \ufb02ow\u00a0here\u2026 m\u00b2.")
    saved = io.BytesIO()
    document.save(saved)
    (docs_dir / "d.docx").write_bytes(saved.getvalue())
    body = "The \ufb01les \ufb02ow{}here\u2026 m\u00b2.\n"
    write(docs_dir, "t.txt", "# Of\ufb01ce rules\n\n" + body.format("\u00a0"))
    write(docs_dir, "m.md", "# Of\ufb01ce rules\n\n" + body.format("&nbsp;"))
    write(
        docs_dir,
        "h.html",
        "<title>Of&#xFB01;ce rules</title><p>The &#xFB01;les "
        "&#xFB02;o&shy;w&nbsp;here&hellip; m&sup2;.</p>",
    )
    for name in ("d.docx", "t.txt", "m.md", "h.html"):
        doc = load_path(docs_dir / name, max_bytes=10**6)[0]
        assert doc.title == "Office rules", name
        assert "The files flow here\u2026 m\u00b2." in doc.text, name


def test_jsonl_records_are_kept_as_written_ligatures_included(docs_dir: Path) -> None:
    record = {"_id": "p1", "title": "Of\ufb01ce", "text": "\ufb01les\u00a0here"}
    doc = load_path(write(docs_dir, "c.jsonl", json.dumps(record)), max_bytes=10**6)[0]
    assert (doc.title, doc.text) == ("Of\ufb01ce", "\ufb01les\u00a0here")


def test_jsonl_ids_and_titles_up_to_their_limits_and_paired_surrogates_load(
    docs_dir: Path,
) -> None:
    """An emoji written as a surrogate pair is a character; ids that merely contain
    ``upload:`` or ``/`` are not file ids."""
    records = [
        {"_id": "i" * 1000, "title": "t" * 1000, "text": "at the limits"},
        {"_id": "a/b:upload:c", "title": "\ud83d\ude00 smile", "text": "fine \ud83d\ude00"},
    ]
    path = write(docs_dir, "edge.jsonl", "\n".join(json.dumps(r) for r in records))
    docs = load_path(path, max_bytes=10**6)
    assert [d.source for d in docs] == ["i" * 1000, "a/b:upload:c"]
    assert docs[1].title == "\U0001f600 smile" and docs[1].text == "fine \U0001f600"
