"""Tokeniser helpers: acronyms spelled out in a text, and text Postgres can store."""

from __future__ import annotations

from convrag.text.tokens import (
    expand_acronyms,
    phrasal_compounds,
    spelled_out,
    storable,
    tokenize,
)


def test_an_acronym_is_spelled_out_by_the_initials_of_consecutive_words() -> None:
    text = (
        "Multi-factor authentication is required. Questions go to the Chief Information "
        "Security Officer. Data comes from the Bureau of Labor Statistics."
    )
    assert spelled_out(text, "Is MFA on? Who is the CISO? What does the BLS say?") == {
        "MFA": "Multi-factor authentication",
        "CISO": "Chief Information Security Officer",
        "BLS": "Bureau of Labor Statistics",
    }


def test_function_words_and_lowercase_question_words_never_spell_an_acronym() -> None:
    assert spelled_out("What is the plan? It is there.", "Is IT on call?") == {}
    assert spelled_out("Multi-factor authentication is required.", "is mfa required?") == {}


def test_the_question_carries_the_spelling_after_its_acronym() -> None:
    text = "Multi-factor authentication with the Authenticator app is required."
    assert expand_acronyms("Is MFA required?", text) == (
        "Is MFA (Multi-factor authentication) required?"
    )
    assert expand_acronyms("Is SSO required?", text) == "Is SSO required?"


def test_phrasal_verbs_give_the_nouns_written_as_one_word() -> None:
    text = "Data is backed up nightly. After logging in, set up the VPN, then shut down."
    assert phrasal_compounds(text) == {"backup", "login", "setup", "shutdown"}
    assert phrasal_compounds("It passes the test.") == set()


def test_storable_drops_nul_and_lone_surrogates_and_keeps_every_real_character() -> None:
    assert storable("a\x00b\ud800c\udfffd") == "abcd"
    assert storable("café 😀 [1]\n\t") == "café 😀 [1]\n\t"


def test_a_possessive_after_initials_stays_with_them() -> None:
    assert [t.text for t in tokenize("Bill W.'s life and the U.S.'s policy")] == [
        "Bill",
        "W.'s",
        "life",
        "and",
        "the",
        "U.S.'s",
        "policy",
    ]
