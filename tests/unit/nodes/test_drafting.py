"""What synthesize and regenerate share: the no-LLM draft."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

import numpy as np

from convrag.config import Settings
from convrag.context import Context
from convrag.nodes._drafting import extractive_draft
from convrag.retrieval.policy import default_policy
from convrag.services import Services
from convrag.state import State


async def test_an_extractive_answer_with_nothing_to_quote_is_the_configured_no_answer_text(
    settings: Settings,
) -> None:
    custom = settings.model_copy(update={"no_answer_text": "Nothing on that here, sorry."})
    services = cast(
        Services, SimpleNamespace(settings=custom, sentences=None, policy=default_policy())
    )
    state = cast(
        State,
        {
            "workspace_id": "w",
            "question": "What is the capital of France?",
            "classification": "standalone",
        },
    )
    text = await extractive_draft(state, Context(services=services), [])
    assert text == "Nothing on that here, sorry."


class _Apart:
    """An embedder that finds no text close to another: only shared words count."""

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.eye(len(texts), 64, dtype=np.float32)


def _source(n: int, text: str) -> dict[str, object]:
    return {
        "id": f"00000000-0000-0000-0000-00000000000{n}",
        "source_type": "chunk",
        "document_id": f"d{n}",
        "title": None,
        "text": text,
        "url": None,
        "score": 1.0,
    }


async def test_a_follow_up_left_as_typed_is_answered_with_the_previous_questions_words(
    settings: Settings,
) -> None:
    """ "What is it?" shares no word with any sentence, and the first source's only one
    was the last answer (a regeneration leaves it out): asked with the previous question
    too, as the "not found" evidence weighs it, it quotes the other source."""
    services = cast(
        Services, SimpleNamespace(settings=settings, sentences=_Apart(), policy=default_policy())
    )
    said = "A Lite plan is a free quota-based service plan."
    turn = {
        "turn_number": 1,
        "question": "What is a Lite plan?",
        "answer": f"{said} [1]",
        "contextualized_query": "What is a Lite plan?",
        "entities": ["Lite"],
        "cited_document_ids": ["d1"],
    }
    state = cast(
        State,
        {
            "workspace_id": "w",
            "question": "What is it?",
            "rewritten_query": "What is it?",
            "classification": "follow_up",
            "history": [turn],
            "sources": [_source(1, said), _source(2, "Lite plans include 256 MB of memory.")],
        },
    )
    ctx = Context(services=services)
    assert await extractive_draft(state, ctx, ["Lite"]) == (
        "Lite plans include 256 MB of memory. [2]"
    )
    alone = cast(State, {**state, "classification": "standalone"})
    assert await extractive_draft(alone, ctx, ["Lite"]) == settings.no_answer_text
