"""Answer units: what of a source text an extractive answer may quote."""

from __future__ import annotations

from convrag.text.units import sentences


def test_an_answer_never_quotes_half_of_a_name_with_an_initial() -> None:
    units = sentences("In 1890, a newspaper editor named Thomas J. Foster founded the school.")
    assert units == ["In 1890, a newspaper editor named Thomas J. Foster founded the school."]


def test_a_table_without_outer_pipes_is_read_as_a_table() -> None:
    text = "Service plan | Retention\n------- | -------\nPlus | Last 30 days\nLite | Last 7 days"
    assert sentences(text) == [
        "Service plan: Plus; Retention: Last 30 days",
        "Service plan: Lite; Retention: Last 7 days",
    ]
