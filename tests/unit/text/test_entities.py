"""Entity extraction: names, acronyms, amounts, years and quoted terms, in text order."""

from __future__ import annotations

from convrag.text.entities import extract_entities


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
