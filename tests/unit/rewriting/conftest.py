"""Conversations the classification and resolution tests share (oldest turn first)."""

from __future__ import annotations

from convrag.records import HistoryTurn
from convrag.rewriting.history import Turn


def stored_turn(question: str, answer: str, n: int = 1, query: str | None = None) -> HistoryTurn:
    """A turn as the service stores it; ``query`` is its standalone question, if rewritten."""
    return HistoryTurn(
        turn_number=n,
        question=question,
        answer=answer,
        contextualized_query=query,
        entities=[],
        cited_document_ids=[],
    )


SALARY = [
    Turn("What is Prasad Chaudhari's salary?", "Prasad Chaudhari's total salary is $120,000."),
]
STORED_SALARY = [stored_turn(t.question, t.answer) for t in SALARY]
""":data:`SALARY` as the service stores it, for the strategies."""
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
NETFLIX_REVENUE = [Turn("What was Netflix's revenue in 2018?", "It was $15.8 billion.")]
DALI = [Turn("Where did Salvador Dali grow up?", "Dali grew up in Figueres, where he studied.")]
CAPITAL_OF_FRANCE = [Turn("What is the capital of France?", "Paris.")]
BURLESQUE = [Turn("What is burlesque?", "A literary parody.")]
# Pronouns whose antecedent is inside the message itself: nothing to resolve.
SELF_BOUND_PRONOUNS = [
    "Did burlesque stay true to its roots?",  # "its" is bound by the question's subject
    "I updated my credit card, but it keeps failing",  # "it" is the card
    "Going back to primary sources, can they be used in literature?",
]
# Low-evidence referents from MTRAG conversations: an adjective, a capitalised first word of a
# lowercase term, one common noun. The rules must leave the pronoun alone rather than guess.
INDEPENDENCE = [
    Turn(
        "what was the indian independence movement?",
        "Indian nationalists led by Gandhi and Sardar Patel campaigned against British rule.",
    )
]
SICKLE_CELL = [
    Turn(
        "How is Sickle cell treated?",
        "The treatment for sickle cell disease may include antibiotics, pain medication and "
        "blood transfusions.",
    )
]
BONE_MARROW = [
    Turn(
        "where is bone marrow found what does it do for the body",
        "Bone marrow is found within the spongy portions of bones. Human marrow produces "
        "approximately 500 billion blood cells per day.",
    )
]
