"""What synthesize and regenerate share: the no-LLM draft."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from convrag.config import Settings
from convrag.context import Context
from convrag.nodes._drafting import extractive_draft
from convrag.services import Services
from convrag.state import State


async def test_an_extractive_answer_with_nothing_to_quote_is_the_configured_no_answer_text(
    settings: Settings,
) -> None:
    custom = settings.model_copy(update={"no_answer_text": "Nothing on that here, sorry."})
    services = cast(Services, SimpleNamespace(settings=custom, sentences=None))
    state = cast(
        State,
        {"question": "What is the capital of France?", "classification": "standalone"},
    )
    text = await extractive_draft(state, Context(services=services), [])
    assert text == "Nothing on that here, sorry."
