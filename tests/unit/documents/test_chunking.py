"""Chunks on paragraph and sentence boundaries."""

from __future__ import annotations

import re

import pytest

from convrag.documents.base import SourceDocument
from convrag.documents.chunking import Chunker

PARAGRAPHS = [
    "Leave policy. Every employee gets 25 days of annual leave per calendar year. Unused "
    "days expire on 31 March of the following year unless your manager agrees otherwise. "
    "Requests go through the HR portal at least two weeks ahead!",
    "Sick leave. There is no fixed limit on sick leave. From the fourth day a doctor's "
    "note is needed (e.g. a scan of the certificate). Dr. Jones in HR answers questions "
    "about long absences. Is a note needed for a child's illness? Yes, from day two.",
    "Parental leave",
    "Parents get 16 weeks of paid leave. It can start up to four weeks before the due "
    "date. The remaining weeks may be split into two blocks. Part-time return is possible "
    "for up to a year, with pay in proportion to the hours worked.",
    "Travel. Book trains and hotels through the travel desk. Flights need approval from a "
    "director when they cost more than 800 euros. Meals are refunded up to 60 euros a day "
    "in Europe and 75 dollars a day in North America.",
]


def _sentence_start(text: str, pos: int) -> bool:
    """Whether ``text[pos:]`` starts a sentence: at the start, after a paragraph or line
    break, or after sentence-final punctuation and a space."""
    before = text[:pos]
    return not before.strip() or before.endswith("\n") or bool(re.search(r"[.!?] $", before))


@pytest.mark.parametrize(("size", "overlap"), [(200, 0), (260, 120), (400, 150)])
def test_chunks_end_on_sentence_boundaries_and_overlap_starts_at_one(
    size: int, overlap: int
) -> None:
    text = "\n\n".join(PARAGRAPHS)
    chunks = Chunker(size, overlap).split(SourceDocument("s", "t", text))
    assert len(chunks) > 2 and all(len(c) <= size for c in chunks)
    for c in chunks[:-1]:
        assert re.search(r"[.!?)]$", c), c  # never mid-sentence, never on a heading
    starts = []
    for c in chunks:
        pos = text.index(c)
        assert _sentence_start(text, pos), c
        starts.append(pos)
    assert starts == sorted(starts)
    ends = [s + len(c) for s, c in zip(starts, chunks, strict=True)]
    overlaps = [ends[k] - starts[k + 1] for k in range(len(chunks) - 1)]
    assert all(o <= overlap for o in overlaps)
    assert any(o > 0 for o in overlaps) == (overlap > 0)
    assert ends[-1] == len(text)  # nothing lost at the end


def test_a_sentence_longer_than_a_chunk_is_cut_between_words() -> None:
    long = "This sentence lists " + ", ".join(f"item {i}" for i in range(60)) + "."
    text = f"Short opener. {long} Short closer."
    chunks = Chunker(120, 40).split(SourceDocument("s", "t", text))
    assert chunks[0] == "Short opener." and chunks[-1] == "Short closer."
    assert all(len(c) <= 120 for c in chunks)
    assert " ".join(chunks[1:-1]) == long


@pytest.mark.parametrize(
    "text",
    [
        "Leave policy: 25 days.\nSick leave: unlimited",
        "  Title\n\n\nOne paragraph, then   odd   spacing.\n\n\n",
        "x" * 800,
    ],
)
def test_a_text_that_fits_in_one_chunk_is_that_chunk_unchanged(text: str) -> None:
    """Chunk ids hash the chunk text; cached evaluation pools rely on them not moving."""
    assert Chunker(800, 100).split(SourceDocument("s", "t", text)) == [text.strip()]


def test_chunks_keep_to_a_section_and_carry_its_heading_path() -> None:
    from convrag.documents.base import SourceDocument
    from convrag.documents.chunking import Chunker

    text = (
        "# Spec\n\nIntro.\n\n## 2 Rules\n\n### 2.12 Checking order\n\nCheck the name first."
        "\n\n```\n# a comment, not a heading\n```\n\n## 3 Other\n\nDone."
    )
    doc = SourceDocument("s", "Spec", text, headings_marked=True)
    chunks = Chunker(500, 50).chunks(doc)
    assert [(c.heading, c.text) for c in chunks] == [
        (("Spec",), "Spec\n\nIntro."),
        (
            ("Spec", "2 Rules", "2.12 Checking order"),
            "2 Rules\n\n2.12 Checking order\n\nCheck the name first.\n\n"
            "```\n# a comment, not a heading\n```",
        ),
        (("Spec", "3 Other"), "3 Other\n\nDone."),
    ]
    plain = SourceDocument("s", None, "# of users\n\nTen.")  # a .txt or JSONL record
    assert [(c.heading, c.text) for c in Chunker(500, 50).chunks(plain)] == [
        ((), "# of users\n\nTen.")
    ]
