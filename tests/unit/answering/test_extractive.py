"""The no-LLM answer: whole sentences of the sources, each with its marker."""

from __future__ import annotations

from collections.abc import Sequence

from convrag.answering.replies import NO_SOURCES_ANSWER
from convrag.records import HistoryTurn
from convrag.retrieval.quoting import PROCEDURE_EXTRA_SENTENCES, answer_length, extractive_answer
from convrag.retrieval.ranking import query_coverage
from convrag.text.units import sentences
from tests.unit.answering.samples import equally_close, source

RECORDS = (
    "Prasad Chaudhari\nPosition: Software Engineer\nBasic Salary: $80,000\n\n"
    "John Doe\nPosition: Software Engineer\nBasic Salary: $75,000\n"
)


def test_short_field_lines_stay_one_record() -> None:
    assert sentences(RECORDS)[0] == (
        "Prasad Chaudhari; Position: Software Engineer; Basic Salary: $80,000"
    )


def test_the_answer_quotes_the_asked_record_with_its_marker_only() -> None:
    answer = extractive_answer("What is Prasad Chaudhari's basic salary?", [source(RECORDS, 1)])
    assert answer.startswith("Prasad Chaudhari;") and answer.endswith("[1]")
    assert "John Doe" not in answer


def test_the_sentence_after_the_best_one_is_quoted_as_its_continuation() -> None:
    text = (
        "The regional office opened in 2019. The commuter tax is 5 percent of gross pay. "
        "It is deducted monthly by the employer. Unrelated remarks about the weather follow."
    )
    answer = extractive_answer("What is the commuter tax?", [source(text, 1)])
    assert "It is deducted monthly by the employer. [1]" in answer
    assert "weather" not in answer


def test_a_how_to_question_may_quote_more_sentences() -> None:
    assert answer_length("How do I reset my password?", 4) == 4 + PROCEDURE_EXTRA_SENTENCES
    assert answer_length("What are the steps to enrol?", 4) == 4 + PROCEDURE_EXTRA_SENTENCES
    assert answer_length("How old is the founder?", 4) == 4


def test_a_said_sentence_naming_an_excluded_entity_is_not_repeated() -> None:
    said = _turn(
        "What is Prasad Chaudhari's salary?",
        "Prasad Chaudhari; Position: Software Engineer; Basic Salary: $80,000 [1]",
    )
    answer = extractive_answer(
        "basic salary",
        [source(RECORDS, 1)],
        history=[said],
        excluded_entities=["Prasad Chaudhari"],
    )
    assert "Prasad" not in answer and "John Doe" in answer


def test_an_unsaid_sentence_stays_though_it_names_an_excluded_entity() -> None:
    # "Free" (a fare's cell in the last answer) neither removes the unsaid answer nor
    # matches the "free" of "free of charge".
    text = "Tickets can be changed free of charge up to a day before. Ticket: Child; Price: Free"
    answer = extractive_answer(
        "Can I change my ticket?",
        [source(text, 1)],
        history=[_turn("And for a child?", "Ticket: Child; Price: Free [1]")],
        excluded_entities=["Free", "Tickets"],
    )
    assert answer.startswith("Tickets can be changed free of charge")


def test_no_sources_says_so_without_a_marker() -> None:
    assert extractive_answer("anything", []) == NO_SOURCES_ANSWER


def test_a_sentence_cut_at_a_chunk_boundary_is_never_quoted() -> None:
    chunk = source(
        "rapidly increased after the war. The population of the city grew to two million "
        "by 1950. But Patel wrote in a letter to his daughter that he and his"
    )
    for question in (
        "What rapidly increased after the war?",
        "What did Patel write to his daughter?",
    ):
        answer = extractive_answer(question, [chunk])
        assert "rapidly increased" not in answer and "he and his" not in answer
        assert answer == "The population of the city grew to two million by 1950. [1]"


def test_a_heading_is_not_quoted_as_an_answer() -> None:
    chunk = source("Meal allowances. The daily meal allowance in Asia is 50 dollars.")
    answer = extractive_answer("What is the meal allowance in Asia?", [chunk])
    assert answer == "The daily meal allowance in Asia is 50 dollars. [1]"


def test_an_faq_answer_quotes_the_answer_not_the_question() -> None:
    faq = source(
        "Which VPN do we use? We use WireGuard through the corp-vpn gateway for every "
        "laptop.\n\nWhich printer do we use? The second floor printer is the default."
    )
    answer = extractive_answer("Which VPN do we use?", [faq])
    assert "WireGuard" in answer and "Which VPN do we use?" not in answer


def test_with_the_embedder_the_sentence_that_answers_beats_one_that_repeats_the_words() -> None:
    meals = source(
        "The meal allowance policy covers meal allowance questions for all regions. "
        "Travellers in Europe receive 60 euros per day for food."
    )

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        return [0.9 if "60 euros" in t else 0.2 for t in texts]

    words_only = extractive_answer("What is the meal allowance in Europe?", [meals])
    by_meaning = extractive_answer(
        "What is the meal allowance in Europe?", [meals], similarity=similarity
    )
    assert by_meaning.startswith("Travellers in Europe receive 60 euros")
    assert "policy covers" not in by_meaning
    assert words_only != by_meaning


TABLE = (
    "Opening hours\n\n| Day | Hours |\n| --- | --- |\n| Monday | 9-17 |\n| Saturday | closed |\n\n"
    "The office is open on weekdays from nine to five."
)


def test_a_table_row_is_a_unit_under_its_column_headers() -> None:
    assert sentences(TABLE)[1:3] == ["Day: Monday; Hours: 9-17", "Day: Saturday; Hours: closed"]


def test_the_answer_quotes_the_asked_table_row_alone() -> None:
    answer = extractive_answer("Is the office open on Saturday?", [source(TABLE, 1)])
    assert answer.startswith("Day: Saturday; Hours: closed [1]")
    assert "Monday" not in answer


MANUAL = (
    "AquaPure 3000 Water Filter - User Manual\n\n"
    "Before you begin, turn off the cold water supply under the sink.\n"
    "Follow these steps to install the filter:\n"
    "1. Mount the filter bracket under the sink using the two screws provided.\n"
    "2. Connect the blue inlet hose to the cold water valve.\n"
    "3. Insert the filter cartridge and turn it clockwise until it clicks.\n\n"
    "2. Replacing the Cartridge\n\n"
    "The filter cartridge should be replaced every 6 months."
)


def test_list_items_are_units_and_headings_are_not_quotable() -> None:
    units = sentences(MANUAL)
    assert "Follow these steps to install the filter:" in units
    assert "2. Connect the blue inlet hose to the cold water valve." in units
    answer = extractive_answer("What is the AquaPure 3000 Water Filter?", [source(MANUAL, 1)])
    assert "User Manual" not in answer and "Replacing the Cartridge" not in answer


def test_a_how_to_answer_quotes_the_steps_its_best_sentence_introduces() -> None:
    answer = extractive_answer("How do I install the filter?", [source(MANUAL, 1)], max_sentences=6)
    assert answer.startswith("Follow these steps to install the filter: [1] 1. Mount")
    assert "3. Insert the filter cartridge" in answer


def test_the_sentence_holding_the_kind_of_answer_asked_for_is_quoted_first() -> None:
    backups = source(
        "Backups are encrypted with AES-256 and stored in two regions. "
        "Production databases are backed up every 4 hours, and backups are kept for a year."
    )

    answer = extractive_answer(
        "How often are backups made?", [backups], similarity=equally_close, max_sentences=1
    )
    assert answer.startswith("Production databases are backed up every 4 hours")
    expiry = source(
        "Employees receive 25 days of annual leave. Unused days of leave expire on 31 March."
    )
    answer = extractive_answer(
        "When do days of annual leave expire?", [expiry], similarity=equally_close, max_sentences=1
    )
    assert answer.startswith("Unused days of leave expire on 31 March.")


def test_an_acronym_the_sources_spell_out_is_answered_by_the_spelled_out_sentence() -> None:
    faq = source(
        "A doctor's certificate is required for any absence longer than 3 days. "
        "Multi-factor authentication with the Authenticator app is required."
    )

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        return [0.6 if "authentication" in t and "authentication" in query else 0.3 for t in texts]

    answer = extractive_answer("Is MFA required?", [faq], similarity=similarity, max_sentences=1)
    assert answer.startswith("Multi-factor authentication with the Authenticator app")
    assert query_coverage("Is MFA required?", faq["text"].split(". ")[1]) == 1.0


def test_a_noun_is_answered_by_the_sentence_that_says_its_phrasal_verb() -> None:
    # The answering sentence shares no word with the question: only "logged in" is "login".
    policy = source("Passwords expire every 90 days. Users stay logged in for 8 hours.")
    answer = extractive_answer("How long does a login last?", [policy], max_sentences=1)
    assert answer == "Users stay logged in for 8 hours. [1]"
    assert query_coverage("backups", "Databases are backed up nightly.") == 1.0


def test_a_sentence_case_heading_is_answered_by_the_statement_under_it() -> None:
    docs = source(
        "Extending the web chat\n\n"
        "A developer can extend the web chat with the toolkit.\n\n"
        "Securing the web chat\n\n"
        "If you enable security, the web chat authenticates users."
    )

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        return [0.9 if t.startswith("Extending") else 0.3 for t in texts]

    answer = extractive_answer(
        "Can I extend the web chat?", [docs], similarity=similarity, max_sentences=1
    )
    assert answer == "A developer can extend the web chat with the toolkit. [1]"
    # After a gerund, an "-ed" word is a participle, not the verb of a statement.
    start = source("Getting started with the web chat\n\nAdd the script to your page first.")
    answer = extractive_answer("How do I get started with the web chat?", [start])
    assert answer == "Add the script to your page first. [1]"


def test_a_heading_with_a_verb_is_answered_by_the_statement_under_it() -> None:
    docs = source(
        "Checking whether a debug target is enabled\n\n"
        "After you have created a debug instance, check its enabled property.\n\n"
        "Output streams\n\nBy default debug logs to stderr."
    )

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        return [0.9 if t.startswith("Checking") else 0.3 for t in texts]

    answer = extractive_answer(
        "How do I check whether debug is enabled?", [docs], similarity=similarity, max_sentences=1
    )
    assert answer.startswith("After you have created a debug instance")


def test_a_heading_over_an_faq_question_is_answered_by_the_answer_under_it() -> None:
    faq = source(
        "Checking your student discount\n\n**Q: Do students get a discount?**\n\n"
        "Students with a university email address get the Plus plan free for 12 months."
    )

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        return [0.9 if t.startswith("Checking") else 0.3 for t in texts]

    answer = extractive_answer(
        "Checking your student discount", [faq], similarity=similarity, max_sentences=2
    )
    assert answer.startswith("Students with a university email address")
    assert "Q:" not in answer


def test_a_lead_in_is_quoted_with_the_value_it_announces() -> None:
    """A lead-in ("Acceptable values for True are:") answers nothing alone; the unit after it does,
    even a last one without a full stop, and even when the question's words match it
    too weakly to be picked on its own."""
    docs = source(
        "The boolean check matches boolean values.\n\nAcceptable string values for True are:"
        "\n\ntrue, on, yes, 1\n\nAcceptable string values for False are:\n\nfalse, off, no, 0"
    )
    answer = extractive_answer("Which strings count as True?", [docs], similarity=equally_close)
    assert "Acceptable string values for True are: [1] true, on, yes, 1 [1]" in answer
    answer = extractive_answer("Which strings count as False?", [docs], similarity=equally_close)
    assert "Acceptable string values for False are: [1] false, off, no, 0 [1]" in answer


def test_a_sentence_announcing_several_reasons_is_quoted_with_the_reasons() -> None:
    docs = source(
        "Checking the patterns first matters. There are several reasons for checking the "
        "glob patterns before the magic. Globs are cheaper to test. They also fail more "
        "clearly. Unrelated remarks follow."
    )

    def similarity(query: str, texts: Sequence[str]) -> list[float]:
        return [0.9 if "several reasons" in t else 0.2 for t in texts]

    answer = extractive_answer(
        "Why check the glob patterns before the magic?",
        [docs],
        similarity=similarity,
        max_sentences=1,
    )
    assert answer.startswith("There are several reasons")
    assert "Globs are cheaper to test. [1] They also fail more clearly. [1]" in answer
    assert "Unrelated" not in answer


def test_the_sentence_after_the_best_one_continues_it_though_its_words_match_weakly() -> None:
    docs = source(
        "Tab Length\n\nThe tab_length keyword sets the length of tabs in the source. "
        "The default value is 4."
    )
    answer = extractive_answer("What is the default tab length?", [docs])
    assert "The default value is 4. [1]" in answer


def test_markdown_images_are_never_quoted() -> None:
    guide = source(
        "5. Click the Actions icon![Actions icon](../icons/actions.svg) and select Delete key.\n\n"
        "![A diagram of the key deletion flow. Two admins approve it.](images/flow.svg)\n\n"
        "A key deletion needs the approval of two admins."
    )
    answer = extractive_answer("How do I delete a key?", [guide], max_sentences=3)
    assert "![" not in answer and "](" not in answer
    assert "Click the Actions icon and select Delete key." in answer


def _turn(question: str, answer: str) -> HistoryTurn:
    return HistoryTurn(
        turn_number=1,
        question=question,
        answer=answer,
        contextualized_query=question,
        entities=[],
        cited_document_ids=[],
    )


def test_a_said_sentence_holding_what_the_follow_up_adds_is_still_quoted() -> None:
    said = _turn(
        "Do unused days of annual leave carry over?",
        "Unused days of annual leave expire on 31 March. [1]",
    )
    carry = source("Unused days of annual leave carry over to the next year.", 1)
    expiry = source("Unused days of annual leave expire on 31 March.", 2)

    def carry_first(query: str, texts: Sequence[str]) -> list[float]:
        return [0.9 if "carry" in t else 0.6 for t in texts]

    answer = extractive_answer(
        "When do unused days of annual leave expire?",
        [carry, expiry],
        history=[said],
        similarity=carry_first,
    )
    assert "Unused days of annual leave expire on 31 March. [2]" in answer


def test_a_follow_up_quotes_the_asked_persons_record_not_also_a_colleagues() -> None:
    said = _turn(
        "What is Prasad Chaudhari's salary?",
        "Prasad Chaudhari; Position: Software Engineer; Basic Salary: $80,000 [1]",
    )
    answer = extractive_answer(
        "What is Prasad Chaudhari's basic salary?", [source(RECORDS, 1)], history=[said]
    )
    assert answer == "Prasad Chaudhari; Position: Software Engineer; Basic Salary: $80,000 [1]"


def test_rows_that_each_hold_an_asked_value_the_other_lacks_are_both_quoted() -> None:
    rows = source(
        "| Region | Hotel |\n| --- | --- |\n| Europe | 200 EUR |\n| Asia | 180 USD |\n"
        "| Africa | 150 USD |\n"
    )
    answer = extractive_answer("What is the hotel limit in Europe and in Asia?", [rows])
    assert "Europe" in answer and "Asia" in answer and "Africa" not in answer


def test_a_row_the_table_lacks_is_not_found_rather_than_answered_by_other_rows() -> None:
    rows = source(
        "| Region | Hotel per night |\n| --- | --- |\n| Europe | 200 EUR |\n"
        "| North America | 250 USD |\n"
    )
    absent = extractive_answer("What is the hotel limit per night in Africa?", [rows])
    assert absent == NO_SOURCES_ANSWER
    held = extractive_answer("What is the hotel limit per night in Europe?", [rows])
    assert held.startswith("Region: Europe; Hotel per night: 200 EUR [1]")


def test_a_question_in_a_script_other_than_latin_is_answered_by_its_words() -> None:
    travel = source(
        "يجب حجز تذاكر القطار عبر مكتب السفر.\n\nالحد الأقصى للفندق 200 دولار في الليلة."
    )
    answer = extractive_answer("ما هو الحد الأقصى للفندق؟", [travel])
    assert answer.startswith("الحد الأقصى للفندق 200 دولار في الليلة. [1]")


def test_an_faq_question_in_bold_is_never_quoted() -> None:
    faq = source(
        "**Q: How do I cancel my subscription?**\n\nA: Open Settings and choose Cancel plan.\n\n"
        "**Q: How do I export my notes?**\n\nA: Use File, then Export, to save every note."
    )
    answer = extractive_answer("How do I cancel or export my subscription notes?", [faq])
    assert "**Q:" not in answer and "Cancel plan." in answer


def test_a_weaker_sentence_of_another_document_is_left_out_of_the_answer() -> None:
    faq = "If you pay annually, you get two months free."
    policy = "After ten days, statutory sick pay applies."

    def alike(query: str, texts: Sequence[str]) -> list[float]:
        return [0.5 if t == faq else 0.55 for t in texts]

    def answer(policy_title: str) -> str:
        sources = [source(faq, 1, "Lumenote FAQ"), source(policy, 2, policy_title)]
        return extractive_answer("Is there a discount if I pay yearly?", sources, similarity=alike)

    assert answer("Leave policy") == f"{faq} [1]"
    # The same score within the best sentence's own document clears the usual floor.
    assert answer("Lumenote FAQ") == f"{faq} [1] {policy} [2]"


def test_the_answer_after_a_matched_faq_question_is_quoted() -> None:
    faq = (
        "**Q: Can I export my data?**\n"
        "A: Lumenote exports your data as Markdown or PDF files.\n\n"
        "**Q: Where is my data stored?**\n"
        "A: Everything is kept in our data centres in Frankfurt, Germany."
    )
    answer = extractive_answer("Where is my data stored?", [source(faq, 1)], max_sentences=1)
    assert answer == "Everything is kept in our data centres in Frankfurt, Germany. [1]"
