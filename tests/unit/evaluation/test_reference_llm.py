"""The stand-in LLM that rewrites as MTRAG's reference does, on hand-made turns."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from convrag import prompts
from convrag.evaluation.reference_llm import (
    is_rewrite_request,
    reference_rewrites,
    rewrite_reply,
)
from convrag.records import HistoryTurn


@dataclass(frozen=True)
class Turn:
    question: str
    rewrite_llm: str | None
    history: list[dict[str, str]] = field(default_factory=list)


def _asked(*previous: str) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for q in previous:
        out += [{"speaker": "user", "text": q}, {"speaker": "agent", "text": "An answer."}]
    return out


def _request(question: str, *previous: str) -> dict[str, object]:
    """The rewrite request the graph sends for ``question`` after ``previous``."""
    history = [
        HistoryTurn(
            turn_number=i,
            question=q,
            answer="An answer.",
            contextualized_query=None,
            entities=[],
            cited_document_ids=[],
        )
        for i, q in enumerate(previous, 1)
    ]
    prompt = prompts.REWRITE_PROMPT.format(
        history=prompts.format_history(history), question=question, boundary="b"
    )
    return {"messages": [{"role": "user", "content": prompt}]}


TURNS = [
    Turn("Where do the Cardinals play?", None),
    Turn(
        "Did they play in London?",
        "Did the Cardinals play in London?",
        _asked("Where do the Cardinals play?"),
    ),
    Turn(
        "Did they play in London?", "Did the Giants play in London?", _asked("Who are the Giants?")
    ),
    Turn("What is BM25?", "What is BM25?", _asked("Did they play in London?")),
]


def test_a_follow_up_gets_its_own_reference_rewrite_found_by_the_previous_question() -> None:
    reply = rewrite_reply(reference_rewrites(TURNS))
    cardinals = json.loads(
        reply(_request("Did they play in London?", "Where do the Cardinals play?"))
    )
    giants = json.loads(reply(_request("Did they play in London?", "Who are the Giants?")))
    assert cardinals == {
        "classification": "follow_up",
        "query": "Did the Cardinals play in London?",
    }
    assert giants["query"] == "Did the Giants play in London?"


def test_a_turn_whose_reference_is_the_question_is_standalone() -> None:
    reply = rewrite_reply(reference_rewrites(TURNS))
    verdict = json.loads(reply(_request("What is BM25?", "Did they play in London?")))
    assert verdict == {"classification": "standalone", "query": "What is BM25?"}


def test_a_turn_without_a_reference_keeps_its_question() -> None:
    reply = rewrite_reply(reference_rewrites(TURNS))
    verdict = json.loads(reply(_request("And in 2019?", "Where do the Cardinals play?")))
    assert verdict == {"classification": "standalone", "query": "And in 2019?"}


def test_only_the_rewrite_prompt_is_answered_with_a_rewrite() -> None:
    assert is_rewrite_request(_request("Did they play in London?", "Who?"))
    assert not is_rewrite_request({"messages": [{"role": "user", "content": "Answer this."}]})
