"""PDF files page by page."""

from __future__ import annotations

from pathlib import Path

from convrag.documents import load_path
from tests.documents.samples import pdf_bytes


def test_a_pdf_is_read_page_by_page_without_gluing_headings_to_sentences(
    docs_dir: Path,
) -> None:
    path = docs_dir / "policy.pdf"
    path.write_bytes(
        pdf_bytes(
            [
                [
                    "Remote Work Policy",
                    "Staff may work remotely three days a week with the approval of",
                    "their manager. Requests go through the HR portal.",
                    "Equipment",
                    "The company provides a laptop and a monitor.",
                ],
                ["Travel", "Book hotels through the travel desk."],
            ]
        )
    )
    doc = load_path(path, max_bytes=10**6)[0]
    assert doc.pages == (
        "Remote Work Policy\n\nStaff may work remotely three days a week with the approval "
        "of their manager. Requests go through the HR portal.\n\nEquipment\n\n"
        "The company provides a laptop and a monitor.",
        "Travel\n\nBook hotels through the travel desk.",
    )
    assert doc.text == "\n\n".join(doc.pages) and doc.metadata["pages"] == 2
