"""Word documents: paragraphs, headings, lists and tables in order."""

from __future__ import annotations

from pathlib import Path

from convrag.documents import load_path
from tests.documents.samples import docx_bytes


def test_a_docx_gives_paragraphs_headings_lists_and_tables_in_order(docs_dir: Path) -> None:
    path = docs_dir / "onboarding.docx"
    path.write_bytes(docx_bytes())
    doc = load_path(path, max_bytes=10**6)[0]
    assert doc.title == "Onboarding guide" and doc.metadata["format"] == ".docx"
    assert doc.text == (
        "Onboarding\n\n"
        "Welcome to Acme. Your manager meets you on day one at the front desk.\n\n"
        "- Bring your ID card.\n- Sign the contract.\n\n"
        "| Item | Owner |\n| Laptop | IT desk |\n| Mail | HR |\n\n"
        "After the first week\n\n"
        "Every new employee gets a mentor for three months."
    )
