"""Plain text files: the title a text file gives itself at its top, else its file name."""

from __future__ import annotations

from pathlib import Path

from convrag.documents.load import load_path
from tests.documents.samples import write

LS_PAGE = """LS(1)                        User Commands                       LS(1)

NAME
       ls - list directory contents

SYNOPSIS
       ls [OPTION]... [FILE]...

DESCRIPTION
       List information about the FILEs (the current directory by default).
"""


def _title(docs_dir: Path, name: str, text: str) -> str | None:
    return load_path(write(docs_dir, name, text), max_bytes=10**6)[0].title


def test_a_man_page_rendered_as_text_is_titled_by_its_name_line(docs_dir: Path) -> None:
    assert _title(docs_dir, "ls.1.txt", LS_PAGE) == "ls - list directory contents"


def test_a_man_page_in_overstruck_bold_is_titled_by_its_name_line_read_plainly(
    docs_dir: Path,
) -> None:
    bold = "".join(f"{c}\b{c}" for c in "NAME")
    text = f"{bold}\n       grep - print lines that\n       match patterns\n\nSYNOPSIS\n"
    assert _title(docs_dir, "grep.txt", text) == "grep - print lines that match patterns"


def test_a_text_file_is_titled_by_its_opening_markdown_heading(docs_dir: Path) -> None:
    text = "# Remote Work Policy\n\nStaff may work remotely three days a week.\n"
    assert _title(docs_dir, "rw-2024-final.txt", text) == "Remote Work Policy"


def test_a_text_file_is_titled_by_its_underlined_first_line(docs_dir: Path) -> None:
    equals = "Remote Work Policy\n==================\n\nStaff may work remotely.\n"
    dashes = "Travel Rules\n------------\nBook trains through the travel desk.\n"
    assert _title(docs_dir, "a.txt", equals) == "Remote Work Policy"
    assert _title(docs_dir, "b.txt", dashes) == "Travel Rules"


def test_a_text_file_is_titled_by_a_first_line_in_capitals_standing_alone(
    docs_dir: Path,
) -> None:
    text = "REMOTE WORK POLICY\n\nStaff may work remotely three days a week.\n"
    assert _title(docs_dir, "rw.txt", text) == "REMOTE WORK POLICY"


def test_a_text_file_without_a_heading_at_its_top_is_titled_by_its_file_name(
    docs_dir: Path,
) -> None:
    cases = {
        "prose.txt": "Staff may work remotely three days a week.\nAsk your manager.\n",
        "late.txt": "Some notes first.\n\n# A heading further down\n",
        "section.txt": "INTRODUCTION\n\nA single word in capitals is a section, not a title.\n",
        "sentence.txt": "Read this first.\n================\n",
        "one_line.txt": "Remote Work Policy\n",
    }
    for name, text in cases.items():
        assert _title(docs_dir, name, text) == name.removesuffix(".txt"), name


def test_a_text_files_text_is_kept_as_it_is_with_its_title_line(docs_dir: Path) -> None:
    doc = load_path(write(docs_dir, "ls.txt", LS_PAGE), max_bytes=10**6)[0]
    assert doc.text == LS_PAGE
