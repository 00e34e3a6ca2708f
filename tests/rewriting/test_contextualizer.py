"""Behaviour of the rule-based contextualizer: classification, rewriting, entity extraction."""

from __future__ import annotations

import time

import pytest

from convrag.rewriting.contextualizer import Turn, classify, contextualize, extract_entities

SALARY = [
    Turn("What is Prasad Chaudhari's salary?", "Prasad Chaudhari's total salary is $120,000."),
]
ENGINEERS = [
    Turn("Who are the software engineers?", "Prasad Chaudhari and John Doe are software engineers.")
]
SALARIES = [
    *ENGINEERS,
    Turn("What are their salaries?", "Prasad Chaudhari earns $120,000 and John Doe earns $95,000."),
]
RAG = [
    Turn(
        "What is retrieval-augmented generation?",
        "Retrieval-augmented generation (RAG) grounds a language model in retrieved passages.",
    )
]


def test_her_resolves_to_the_person_of_the_previous_turn_and_keeps_basic_salary() -> None:
    message = "What about her basic salary?"
    assert classify(message, SALARY) == "follow_up"
    out = contextualize(message, SALARY)
    assert "Prasad Chaudhari" in out
    assert "basic salary" in out
    assert " her " not in f" {out.lower()} "


def test_what_about_maps_onto_the_previous_question_frame() -> None:
    assert contextualize("What about her basic salary?", SALARY) == (
        "What is Prasad Chaudhari's basic salary?"
    )


def test_their_with_two_people_in_the_previous_answer_names_both() -> None:
    message = "What are their salaries?"
    assert classify(message, ENGINEERS) == "follow_up"
    out = contextualize(message, ENGINEERS)
    assert "Prasad Chaudhari" in out
    assert "John Doe" in out
    assert "salaries" in out


def test_who_earns_more_after_the_salaries_turn_names_both_people() -> None:
    message = "Who earns more?"
    assert classify(message, SALARIES) == "follow_up"
    out = contextualize(message, SALARIES)
    assert "Prasad Chaudhari" in out
    assert "John Doe" in out
    assert "earns more" in out


def test_elaborate_on_that_is_a_follow_up_that_names_the_previous_topic() -> None:
    message = "Can you elaborate on that?"
    assert classify(message, RAG) == "follow_up"
    out = contextualize(message, RAG)
    assert "retrieval-augmented generation" in out.lower()
    assert out.lower().startswith("can you elaborate on")


def test_it_resolves_to_the_named_thing_of_the_previous_question() -> None:
    history = [Turn("Tell me about the Eiffel Tower.", "It is a wrought-iron tower in Paris.")]
    assert contextualize("How tall is it?", history) == "How tall is the Eiffel Tower?"


def test_ellipsis_with_a_new_year_reuses_the_previous_question() -> None:
    history = [Turn("What was Netflix's revenue in 2018?", "It was $15.8 billion.")]
    assert classify("and in 2019?", history) == "follow_up"
    assert contextualize("and in 2019?", history) == "What was Netflix's revenue in 2019?"


def test_bare_why_expands_into_the_previous_question() -> None:
    history = [Turn("Did Netflix raise its prices in 2019?", "Yes, in January 2019.")]
    assert contextualize("why?", history) == "Why did Netflix raise its prices in 2019?"


def test_any_others_asks_the_previous_question_again_excluding_its_answer() -> None:
    history = [Turn("Which streaming services offer 4K?", "Netflix and Hulu.")]
    out = contextualize("any others?", history)
    assert "streaming services" in out
    assert "Netflix" in out


def test_he_prefers_the_person_the_conversation_is_about_over_a_place() -> None:
    history = [
        Turn(
            "Where was Andrew Johnson born?", "Andrew Johnson was born in Raleigh, North Carolina."
        ),
        Turn("Who were his parents?", "Jacob Johnson and Mary McDonough."),
    ]
    out = contextualize("When did he become president?", history)
    assert out == "When did Andrew Johnson become president?"


def test_a_title_like_first_turn_names_the_dialog_subject() -> None:
    history = [Turn("Pinhead (Hellraiser)", "Powers, weaknesses and limitations")]
    assert contextualize("What are his weaknesses?", history) == "What are Pinhead's weaknesses?"


def test_a_surname_alone_is_spelled_out_from_the_history() -> None:
    history = [
        Turn("Where did Salvador Dali grow up?", "Dali grew up in Figueres, where he studied.")
    ]
    assert classify("Did Dali paint in Paris?", history) == "follow_up"
    assert contextualize("Did Dali paint in Paris?", history) == "Did Salvador Dali paint in Paris?"


def test_what_about_a_new_noun_phrase_reuses_a_what_is_frame() -> None:
    history = [Turn("How old is Barack Obama?", "He is 63.")]
    assert contextualize("what about his wife?", history) == "How old is Barack Obama's wife?"


def test_tell_me_more_appends_the_previous_topic() -> None:
    history = [Turn("What is BM25?", "BM25 is a ranking function.")]
    assert contextualize("Tell me more", history) == "Tell me more about BM25"


def test_leading_thanks_does_not_hide_a_follow_up() -> None:
    history = [Turn("What is the capital of France?", "Paris.")]
    assert classify("Thanks! What about Germany?", history) == "follow_up"
    assert contextualize("Thanks! What about Germany?", history) == (
        "Thanks! What is the capital of Germany?"
    )


@pytest.mark.parametrize(
    "message",
    [
        "Did burlesque stay true to its roots?",  # "its" is bound by the question's subject
        "I updated my credit card, but it keeps failing",  # "it" is the card
        "Going back to primary sources, can they be used in literature?",
    ],
)
def test_pronouns_with_an_antecedent_inside_the_message_are_not_follow_ups(message: str) -> None:
    history = [Turn("What is burlesque?", "A literary parody.")]
    assert classify(message, history) == "standalone"
    assert contextualize(message, history) == message


def test_a_new_explicit_subject_is_a_standalone_topic_switch() -> None:
    assert classify("Now tell me about Topic B", SALARY) == "standalone"
    assert contextualize("Now tell me about Topic B", SALARY) == "Now tell me about Topic B"


def test_a_complete_question_with_history_is_standalone_and_unchanged() -> None:
    message = "What is the capital of France?"
    assert classify(message, SALARY) == "standalone"
    assert contextualize(message, SALARY) == message


@pytest.mark.parametrize(
    "message", ["hi", "Hello there!", "thanks!", "Thank you so much", "ok great", "got it, bye"]
)
def test_greetings_and_thanks_need_no_retrieval(message: str) -> None:
    assert classify(message, SALARY) == "no_retrieval"
    assert classify(message, []) == "no_retrieval"


@pytest.mark.parametrize(
    "message",
    [
        "format that as a table",
        "make it shorter",
        "translate that into French",
        "summarize your last answer",
        "Can you put that in bullet points?",
    ],
)
def test_reformatting_the_previous_answer_needs_no_retrieval(message: str) -> None:
    assert classify(message, SALARY) == "no_retrieval"


def test_a_request_about_a_new_subject_is_not_mistaken_for_reformatting() -> None:
    assert classify("summarize the history of the Roman Empire", SALARY) == "standalone"
    assert classify("Can you explain that further?", RAG) == "follow_up"


def test_without_history_a_message_is_standalone_and_returned_stripped() -> None:
    assert classify("What about her basic salary?", []) == "standalone"
    assert contextualize("  What about her basic salary?  ", []) == "What about her basic salary?"


def test_expletive_it_is_not_treated_as_a_reference() -> None:
    assert classify("Is it possible to pay salaries weekly in India?", SALARY) == "standalone"


@pytest.mark.parametrize("message", ["", "   ", "?", "it", "why?", "thanks"])
def test_output_is_never_empty(message: str) -> None:
    for history in ([], SALARY, [Turn("", "")]):
        assert contextualize(message, history).strip()


def test_extract_entities_finds_names_acronyms_amounts_and_quotes_in_order() -> None:
    text = (
        "The CEO of Netflix, Reed Hastings, said revenue rose 12% to $8.8 billion in 2023 and "
        '"Squid Game" topped the charts. Prasad Chaudhari earns $120,000. netflix grew.'
    )
    assert extract_entities(text) == [
        "CEO",
        "Netflix",
        "Reed Hastings",
        "12%",
        "$8.8 billion",
        "2023",
        "Squid Game",
        "Prasad Chaudhari",
        "$120,000",
    ]


def test_extract_entities_drops_sentence_initial_function_words() -> None:
    entities = extract_entities("What is the salary? The Battle of Gettysburg ended in July.")
    assert entities == ["Battle of Gettysburg"]


def test_calls_are_fast_on_a_long_history() -> None:
    history = [
        Turn(f"What did Prasad Chaudhari do in {1990 + i}?", "He worked at IBM in New York. " * 20)
        for i in range(15)
    ]
    start = time.perf_counter()
    for i in range(200):
        contextualize(f"What about his salary in {2000 + i}?", history)
        classify("Who earns more?", history)
    per_call_ms = (time.perf_counter() - start) / 400 * 1000
    assert per_call_ms < 1.0


def test_a_first_name_in_the_last_answer_is_spelled_out_from_earlier_turns() -> None:
    history = [
        Turn(
            "Who are the software engineers?",
            "Prasad Chaudhari and John Doe are software engineers.",
        ),
        Turn("What are their salaries?", "Prasad: $120,000, John: $110,000"),
    ]
    rewritten = contextualize("Who earns more?", history)
    assert "Prasad Chaudhari" in rewritten and "John Doe" in rewritten
