"""Word documents: paragraphs, headings, lists and tables in order."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from convrag.documents.base import IngestError
from convrag.documents.load import load_path
from tests.documents.samples import docx_bytes


def test_a_docx_gives_paragraphs_headings_lists_and_tables_in_order(docs_dir: Path) -> None:
    path = docs_dir / "onboarding.docx"
    path.write_bytes(docx_bytes())
    doc = load_path(path, max_bytes=10**6)[0]
    assert doc.title == "Onboarding guide" and doc.metadata["format"] == ".docx"
    assert doc.text == (
        "# Onboarding\n\n"
        "Welcome to Acme. Your manager meets you on day one at the front desk.\n\n"
        "- Bring your ID card.\n- Sign the contract.\n\n"
        "| Item | Owner |\n| --- | --- |\n| Laptop | IT desk |\n| Mail | HR |\n\n"
        "## After the first week\n\n"
        "Every new employee gets a mentor for three months."
    )


def test_a_docx_without_a_title_property_is_titled_by_its_opening_title_or_heading(
    docs_dir: Path,
) -> None:
    import docx

    titled, headed, plain = docx.Document(), docx.Document(), docx.Document()
    titled.add_heading("Company car policy", level=0)
    titled.add_paragraph("Directors get an executive car.")
    headed.add_heading("Grades", level=1)
    headed.add_paragraph("Directors get an executive car.")
    plain.add_paragraph("Directors get an executive car.")
    plain.add_heading("Grades", level=1)
    pairs = (("titled.docx", titled), ("grades.docx", headed), ("car_policy.docx", plain))
    for name, document in pairs:
        buf = io.BytesIO()
        document.save(buf)
        (docs_dir / name).write_bytes(buf.getvalue())
    assert load_path(docs_dir / "titled.docx", max_bytes=10**6)[0].title == "Company car policy"
    assert load_path(docs_dir / "grades.docx", max_bytes=10**6)[0].title == "Grades"
    assert load_path(docs_dir / "car_policy.docx", max_bytes=10**6)[0].title == "car_policy"


def test_a_docx_whose_parts_expand_past_the_cap_is_refused_before_it_is_read(
    docs_dir: Path,
) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        source = zipfile.ZipFile(io.BytesIO(docx_bytes()))
        for name in source.namelist():
            archive.writestr(name, source.read(name))
    # A 4 MiB part of spaces compresses to a few kB: a small file, a large expansion.
    with zipfile.ZipFile(buf, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/media/padding.xml", b" " * (4 << 20))
    path = docs_dir / "bomb.docx"
    path.write_bytes(buf.getvalue())
    assert path.stat().st_size < 64 << 10
    with pytest.raises(IngestError, match=r"over the 1\.0 MiB limit.*MAX_DECOMPRESSED_BYTES"):
        load_path(path, max_bytes=10**6, max_decompressed_bytes=1 << 20)
    assert load_path(path, max_bytes=10**6, max_decompressed_bytes=8 << 20)[0].title
