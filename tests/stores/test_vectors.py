"""Pure helpers of the in-process search engines."""

from __future__ import annotations

import pytest

from convrag.stores.vectors import one_edit_variants


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
