"""What ``convrag ingest`` and ``serve --docs`` read from a folder before any store
starts: pages of navigation alone are skipped with a note, a file that cannot be read is
counted as a failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from convrag.cli.documents import read_documents
from convrag.documents.base import IngestError

NAVIGATION = (
    '<html><head><title>Index</title></head><body><div class="header"><p>Previous: '
    '<a href="a.html">Using it</a>, Up: <a href="index.html">Top</a></p></div>'
    "<nav><ul><li><a href='a.html'>1 Using it</a></li></ul></nav></body></html>"
)
CONTENT = (
    "<html><head><title>Using it</title></head><body><h2>Using it</h2><p>Prepare a call "
    "interface first, then call the function through it with its arguments.</p></body></html>"
)


def test_a_manuals_navigation_pages_are_skipped_with_a_note_and_its_pages_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "index.html").write_text(NAVIGATION)
    (tmp_path / "a.html").write_text(CONTENT)
    (tmp_path / "blank.md").write_text("  \n")
    read = read_documents([tmp_path], quiet=True)
    assert [d.title for d in read.documents] == ["Using it"] and read.unreadable == 0
    reasons = {e.path.name: e.reason for e in read.nothing_to_index}
    assert reasons == {"index.html": "navigation only", "blank.md": "no text"}
    err = capsys.readouterr().err
    assert f"skipped {tmp_path / 'index.html'}: navigation only, no text to index" in err


def test_a_corrupt_file_beside_them_is_counted_unreadable_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "index.html").write_text(NAVIGATION)
    (tmp_path / "a.html").write_text(CONTENT)
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 garbage \x00\x01\x02" * 50)
    read = read_documents([tmp_path], quiet=True)
    assert read.unreadable == 1 and len(read.nothing_to_index) == 1
    assert f"not ingested: {tmp_path / 'broken.pdf'}: not a readable PDF" in capsys.readouterr().err


def test_a_folder_of_navigation_alone_has_nothing_to_ingest(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(NAVIGATION)
    with pytest.raises(IngestError, match=r"no text to index \(navigation only"):
        read_documents([tmp_path], quiet=True)
    assert read_documents([tmp_path], quiet=True, allow_empty=True).documents == []
