"""The in-process search engines and their helpers, without a database."""

from __future__ import annotations

import logging

import pytest

from convrag.stores.vectors import Bm25sKeywordIndex, one_edit_variants


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("clpud", "cloud"), ("corel", "correl"), ("emplye", "employe"), ("recieve", "receive")],
)
def test_one_slip_of_the_keyboard_is_among_a_words_variants(typed: str, meant: str) -> None:
    assert meant in one_edit_variants(typed) and typed in one_edit_variants(meant)


@pytest.mark.parametrize(
    ("typed", "other"), [("cloud", "cloud"), ("franc", "frame"), ("abcd", "badc")]
)
def test_the_same_word_or_two_slips_is_not_a_variant(typed: str, other: str) -> None:
    assert other not in one_edit_variants(typed)


def test_building_a_keyword_index_logs_nothing_under_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    index = Bm25sKeywordIndex()
    index.build("ws", 1, [("c1", "d1", "Annual leave is 25 days."), ("c2", "d2", "Meals.")])
    assert [h.document_id for h in index.search("ws", "annual leave", 1)] == ["d1"]
    assert [r.getMessage() for r in caplog.records if r.levelno < logging.WARNING] == []
