"""PDF files page by page."""

from __future__ import annotations

from pathlib import Path

from convrag.documents.load import load_path
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


def test_running_headers_footers_and_page_numbers_are_left_out_of_each_page(
    docs_dir: Path,
) -> None:
    path = docs_dir / "handbook.pdf"
    path.write_bytes(
        pdf_bytes(
            [
                ["ACME Staff Handbook", "Parking is free in lot B.", "Page 1 of 3"],
                ["ACME Staff Handbook", "Lunch is served at noon.", "Page 2 of 3"],
                ["ACME Staff Handbook", "The office closes at six.", "Page 3 of 3"],
            ]
        )
    )
    doc = load_path(path, max_bytes=10**6)[0]
    assert doc.pages == (
        "Parking is free in lot B.",
        "Lunch is served at noon.",
        "The office closes at six.",
    )


def test_a_line_that_repeats_on_only_one_page_in_three_is_kept(docs_dir: Path) -> None:
    path = docs_dir / "prices.pdf"
    pages = [["Prices", "A laptop costs 1200"], ["Support", "Call us."], ["Returns", "Ask."]]
    path.write_bytes(pdf_bytes(pages))
    doc = load_path(path, max_bytes=10**6)[0]
    assert doc.pages[0] == "Prices\n\nA laptop costs 1200"


def test_a_pdf_is_titled_by_its_title_property(docs_dir: Path) -> None:
    path = docs_dir / "rw-2024-final.pdf"
    path.write_bytes(pdf_bytes([["Staff may work remotely."]], title="Remote Work Policy"))
    assert load_path(path, max_bytes=10**6)[0].title == "Remote Work Policy"


def test_a_pdf_whose_title_property_is_a_file_name_is_titled_by_its_own_file_name(
    docs_dir: Path,
) -> None:
    path = docs_dir / "rw-2024-final.pdf"
    text = [["Remote Work Policy", "Staff may work remotely three days a week."]]
    path.write_bytes(pdf_bytes(text, title="Microsoft Word - rw-2024-final.docx"))
    assert load_path(path, max_bytes=10**6)[0].title == "rw-2024-final"


def test_a_pdf_without_a_title_property_is_titled_by_its_file_name(docs_dir: Path) -> None:
    path = docs_dir / "remote_work.pdf"
    path.write_bytes(pdf_bytes([["Trains", "Book tickets through the travel desk."]]))
    assert load_path(path, max_bytes=10**6)[0].title == "remote_work"


def test_contents_and_index_lines_are_left_out_and_headings_found_by_type_size(
    docs_dir: Path,
) -> None:
    path = docs_dir / "manual.pdf"
    body = "The pump moves water from the lower tank to the upper tank at night."
    pages: list[list[str | tuple[str, int]]] = [
        [("Pump Manual", 24), ("version 2.1, May 2026", 11)],
        ["Contents", "1 Operation . . . . . . . . . . 1", "2 Care . . . . . . . . . . . . 2"],
        ["1", ("1 Operation", 16), body, "It runs while the float switch is closed."],
        ["Chapter 1: Operation 2", ("2 Care", 16), "Clean the filter every month."],
        ["Chapter 2: Care 3", "Index", "filter . . . . . . . 2", "float switch . . . . 1"],
    ]
    path.write_bytes(pdf_bytes(pages))
    doc = load_path(path, max_bytes=10**6)[0]
    assert doc.title == "Pump Manual"  # the title page's largest type, the property empty
    assert doc.pages[0] == doc.pages[1] == doc.pages[4] == ""
    assert doc.pages[2].startswith(f"# 1 Operation\n\n{body}")
    assert doc.pages[3] == "# 2 Care\n\nClean the filter every month."


def test_a_sentence_that_runs_on_to_the_next_page_is_read_whole_on_its_first(
    docs_dir: Path,
) -> None:
    path = docs_dir / "notes.pdf"
    pages = [
        ["Staff may work remotely three days a week, with the approval of their own"],
        ["manager and of the team lead.", "Requests go through the portal."],
    ]
    path.write_bytes(pdf_bytes(pages))
    doc = load_path(path, max_bytes=10**6)[0]
    assert doc.pages == (
        "Staff may work remotely three days a week, with the approval of their own "
        "manager and of the team lead.",
        "Requests go through the portal.",
    )


def test_a_contents_list_on_a_page_with_text_goes_with_its_title_and_real_hyphens_stay(
    docs_dir: Path,
) -> None:
    path = docs_dir / "guide.pdf"
    pages: list[list[str | tuple[str, int]]] = [
        [
            ("How-to guides", 20),
            ("Contents", 14),
            "Key principles ........................ 2",
            "Naming ................................ 3",
            "Well-written guides are read most. A guide helps the user get a thing done. A how-",
            "to guide is about work, and it is unspec-",
            "ified what else it holds.",
        ]
    ]
    path.write_bytes(pdf_bytes(pages))
    assert load_path(path, max_bytes=10**6)[0].pages == (
        "# How-to guides\n\nWell-written guides are read most. A guide helps the user get a "
        "thing done. A how-to guide is about work, and it is unspecified what else it holds.",
    )


def test_a_pdfs_ligatures_are_read_as_their_letters(docs_dir: Path) -> None:
    """Helvetica's standard encoding sets "ﬁ" and "ﬂ" as glyphs of their own (bytes
    0xAE and 0xAF), which a PDF's text layer gives as U+FB01 and U+FB02."""
    path = docs_dir / "office.pdf"
    path.write_bytes(pdf_bytes([["The of\xaece keeps its \xaeles where the air \xafows."]]))
    assert load_path(path, max_bytes=10**6)[0].text == (
        "The office keeps its files where the air flows."
    )


def test_a_pdf_without_a_title_is_titled_by_its_one_opening_heading(docs_dir: Path) -> None:
    path = docs_dir / "rw-2024-final.pdf"
    pages: list[list[str | tuple[str, int]]] = [
        [
            ("Remote Work Policy", 18),
            "Staff may work remotely three days a week, with leave.",
            "Requests go through the HR portal, which answers within two working days.",
        ],
        [("Equipment", 14), "The company provides a laptop and a monitor to everyone who asks."],
    ]
    path.write_bytes(pdf_bytes(pages, title="Untitled"))
    assert load_path(path, max_bytes=10**6)[0].title == "Remote Work Policy"


def test_a_pdf_whose_largest_headings_are_its_chapters_is_titled_by_its_file_name(
    docs_dir: Path,
) -> None:
    path = docs_dir / "handbook.pdf"
    pages: list[list[str | tuple[str, int]]] = [
        [("Parking", 18), "Parking is free in lot B for every member of staff who drives in."],
        [("Lunch", 18), "Lunch is served at noon in the canteen on the first floor."],
    ]
    path.write_bytes(pdf_bytes(pages))
    assert load_path(path, max_bytes=10**6)[0].title == "handbook"


def test_no_space_is_read_between_inline_code_and_the_punctuation_beside_it(
    docs_dir: Path,
) -> None:
    """A browser prints inline code in a padded box: the text layer's gap beside it reads
    as a space, which stands before a clause's end or inside brackets only there."""
    path = docs_dir / "scripts.pdf"
    line = ["Run a stage with ", "npm run <stage>", ". It reads ", "package.json", ", then (see "]
    pages = [[[*line, "npm help", "). It joins with ", ";", " or a space."]]]
    path.write_bytes(pdf_bytes(pages))
    assert load_path(path, max_bytes=10**6)[0].text == (
        "Run a stage with npm run <stage>. It reads package.json, then (see npm help). "
        "It joins with ; or a space."
    )


def test_a_compound_broken_at_its_hyphen_before_a_capital_is_read_whole(
    docs_dir: Path,
) -> None:
    """However short the line that breaks it; a suspended hyphen ("pre- and post-"), a
    dash standing alone and a dash bullet keep their spaces and lines."""
    path = docs_dir / "proxy.pdf"
    lines: list[str | tuple[str, int] | list[str]] = [
        "Start it with docker run --rm -p 8080:8080 -e TRUST_PROXY=1 example/server:latest.",
        "The server reads the client address from the X-",
        "Forwarded-For header that the proxy sets, and runs pre-",
        "and post-install hooks in the order given by the list -",
        "alternatively by name. Hooks are run for these stages:",
        "- install",
    ]
    path.write_bytes(pdf_bytes([lines]))
    assert load_path(path, max_bytes=10**6)[0].text.split("\n\n")[1:] == [
        "The server reads the client address from the X-Forwarded-For header that the proxy "
        "sets, and runs pre- and post-install hooks in the order given by the list - "
        "alternatively by name. Hooks are run for these stages:\n- install"
    ]
