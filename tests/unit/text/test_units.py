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


def test_a_sentence_wrapped_onto_a_short_line_is_prose_and_field_lines_a_record() -> None:
    wrapped = (
        "Parental leave is 16 weeks at full pay for every parent, to be taken within the first"
        " year\nafter a birth or adoption."
    )
    assert sentences(wrapped) == [
        "Parental leave is 16 weeks at full pay for every parent, to be taken within the first"
        " year after a birth or adoption."
    ]
    record = "Maria Lopez\nPosition: Product Manager\nBasic Salary: $90,000"
    assert sentences(record) == ["Maria Lopez; Position: Product Manager; Basic Salary: $90,000"]


def test_an_faq_answer_label_is_not_quoted_and_its_question_line_is_no_record() -> None:
    units = sentences("**Q: Can I get a refund?**\nA: We refund annual plans.\n\n**Answer:** Yes.")
    assert units == ["**Q: Can I get a refund?**", "We refund annual plans.", "Yes."]
