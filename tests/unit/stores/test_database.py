"""The relational store's pure helpers: conversation titles and joined chunk texts."""

from __future__ import annotations

from convrag.stores.conversations import TITLE_CHARS, title_from_question
from convrag.stores.documents import join_chunks


def test_a_conversation_title_is_its_first_question_on_one_line_cut_at_a_word() -> None:
    assert title_from_question("  What is the\n  meal allowance? ") == "What is the meal allowance?"
    long = title_from_question("allowance " * 20)
    assert long is not None and len(long) <= TITLE_CHARS and long.endswith("allowance\u2026")
    assert title_from_question("   ") is None and title_from_question(None) is None


def test_joined_chunks_give_each_overlapping_sentence_once() -> None:
    from convrag.documents.base import SourceDocument
    from convrag.documents.chunking import Chunker

    sentences = [f"Sentence number {i} says something about topic {i % 7}." for i in range(60)]
    text = "\n\n".join(" ".join(sentences[i : i + 5]) for i in range(0, 60, 5))
    chunks = Chunker(200, 80).split(SourceDocument("s", "t", text, {}))
    assert len(chunks) > 5 and sum(map(len, chunks)) > len(text)  # they do overlap
    joined = join_chunks(chunks)
    assert " ".join(joined.split()) == " ".join(text.split())
    assert join_chunks(["Page one ends here.", "Page two starts here."]) == (
        "Page one ends here.\n\nPage two starts here."
    )
