"""Plain text files: their section headings (reStructuredText, setext, Markdown,
AsciiDoc) and the title a text file gives itself at its top, else its file name."""

from __future__ import annotations

from pathlib import Path

from convrag.documents.chunking import Chunk, Chunker
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


RST_FAQ = """.. include:: docs/header0.rst

.. NOTE TO MAINTAINERS: Please add new questions to the end of their
   sections, so section/question numbers remain stable.

===========================================
 Docutils FAQ (Frequently Asked Questions)
===========================================

:Date: $Date: 2026-01-11 $
:Web site: https://docutils.sourceforge.io/

.. contents::

Docutils
========

What is Docutils?
-----------------

Docutils is a system for processing plaintext documentation.

How can I indicate the document title?  Subtitle?
-------------------------------------------------

A uniquely-adorned section title at the beginning of a document is
treated as the document title.  For example::

    This is the Document Title
    ==========================

reStructuredText
================

Why is it called "reStructuredText"?
------------------------------------

It is a revision and reinterpretation of StructuredText.
"""


def _read(docs_dir: Path, name: str, text: str) -> tuple[str | None, list[Chunk]]:
    doc = load_path(write(docs_dir, name, text), max_bytes=10**6)[0]
    return doc.title, Chunker(800, 100).chunks(doc)


def test_a_restructuredtext_files_drawn_headings_are_its_sections_and_their_lines_go(
    docs_dir: Path,
) -> None:
    title, chunks = _read(docs_dir, "faq.txt", RST_FAQ)
    sections = {c.heading[1:]: c.text for c in chunks if len(c.heading) > 1}
    assert sections[("Docutils", "What is Docutils?")] == (  # headings in a row lead one chunk
        "Docutils\n\nWhat is Docutils?\n\n"
        "Docutils is a system for processing plaintext documentation."
    )
    asked = sections[("Docutils", "How can I indicate the document title? Subtitle?")]
    assert asked.startswith("How can I indicate the document title? Subtitle?\n\nA uniquely")
    # An example indented in a literal block is code, not a heading of the text.
    assert "    This is the Document Title\n    ======" in asked
    assert ("reStructuredText", 'Why is it called "reStructuredText"?') in sections
    assert all(c.heading[0] == title for c in chunks if c.heading)
    assert not any(line.startswith(("===", "---")) for c in chunks for line in c.text.split("\n"))


def test_a_text_file_is_titled_by_its_over_and_underlined_heading_after_comments_and_fields(
    docs_dir: Path,
) -> None:
    assert _title(docs_dir, "docutils-faq.txt", RST_FAQ) == (
        "Docutils FAQ (Frequently Asked Questions)"
    )
    label = ".. _config_doc:\n\nReading Config Files\n====================\n\nText.\n"
    assert _title(docs_dir, "configobj.txt", label) == "Reading Config Files"
    asciidoc = "= Ninja Manual\n:toc:\n\n== Pools\n\nPools limit parallel jobs.\n"
    assert _title(docs_dir, "manual.txt", asciidoc) == "Ninja Manual"


def test_a_text_file_whose_top_sections_share_one_style_is_titled_by_its_file_name(
    docs_dir: Path,
) -> None:
    text = "Install\n=======\n\nRun make.\n\nUsage\n=====\n\nRun it.\n"
    title, chunks = _read(docs_dir, "guide.txt", text)
    assert title == "guide"
    assert [c.heading for c in chunks] == [("Install",), ("Usage",)]


def test_markdown_and_asciidoc_headings_in_a_text_file_are_its_sections(docs_dir: Path) -> None:
    text = (
        "# Build Notes\n\nSome notes.\n\n## Pools\n\nPools limit jobs.\n\n"
        "== Depfiles\n\nDepfiles list headers.\n"
    )
    _, chunks = _read(docs_dir, "notes.txt", text)
    assert [(c.heading, c.text) for c in chunks] == [
        (("Build Notes",), "Build Notes\n\nSome notes."),
        (("Build Notes", "Pools"), "Pools\n\nPools limit jobs."),
        (("Build Notes", "Depfiles"), "Depfiles\n\nDepfiles list headers."),
    ]


def test_tables_rules_and_underlined_paragraph_lines_are_not_read_as_headings(
    docs_dir: Path,
) -> None:
    text = (
        "Intro line.\n\n"
        "=====  =====\nName   Value\n=====  =====\nfoo    1\n=====  =====\n\n"
        "+------+-------+\n| a    | b     |\n+------+-------+\n\n"
        "Name     Value\n--------------\nfoo      1\n\n"
        "A paragraph whose last line\nis underlined\n=============\n\n"
        "----------\n\n"
        "The end.\n"
    )
    title, chunks = _read(docs_dir, "tables.txt", text)
    assert title == "tables" and all(c.heading == () for c in chunks)
    joined = "\n".join(c.text for c in chunks)
    for kept in ("=====  =====", "+------+-------+", "Name     Value\n--------------", "\n====="):
        assert kept in joined, kept
    assert "\n----------\n" not in joined  # a horizontal rule is no text


def test_hash_comment_lines_in_a_text_file_stay_text_and_are_no_headings(docs_dir: Path) -> None:
    text = (
        "# Build settings for the farm.\n# Edit with care\nthreads = 4\n\n# Pools\n\n"
        "Pools cap jobs.\n"
    )
    title, chunks = _read(docs_dir, "build.txt", text)
    assert title == "build"
    assert [(c.heading, c.text) for c in chunks] == [
        ((), "# Build settings for the farm.\n # Edit with care\nthreads = 4"),
        (("Pools",), "Pools\n\nPools cap jobs."),
    ]
