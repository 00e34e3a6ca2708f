"""The LLM's answer: its prompt, its streamed text, and recognising its "not found"."""

from __future__ import annotations

import pytest

from convrag.answering.llm import build_messages, llm_answer, says_not_found
from convrag.prompts import Fence


@pytest.mark.parametrize(
    ("answer", "meant"),
    [
        ("I could not find this in the workspace's documents.", True),
        ('"I could not find this in the workspace\'s documents"', True),
        ("  i could not find this in the workspace's   documents! ", True),
        (
            "I could not find this in the workspace's documents. "
            "The travel policy [1] only covers Europe.",
            False,
        ),
        ("Prasad Chaudhari's salary is $120,000 [1].", False),
    ],
)
def test_only_the_not_found_sentence_alone_reads_as_not_found(answer: str, meant: bool) -> None:
    assert says_not_found(answer, "I could not find this in the workspace's documents.") is meant


def test_the_canary_opens_the_system_message_so_a_recited_prompt_is_caught_at_once() -> None:
    fence = Fence.new()
    system = build_messages("Q?", "Q?", [], [], [], fence, "Not found.")[0].content
    assert isinstance(system, str)
    first_paragraph = system.split("\n\n", 1)[0]
    assert fence.canary in first_paragraph and fence.leaked(first_paragraph)
    assert system.count(fence.canary) == 1


async def test_nul_bytes_and_lone_surrogates_never_reach_the_tokens_or_the_message() -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    model = GenericFakeChatModel(messages=iter([AIMessage("Her\x00 salary is\ud800 $80,000 [1].")]))
    tokens: list[str] = []
    reply = await llm_answer(model, [], on_token=tokens.append)
    assert reply.content == "Her salary is $80,000 [1]."
    assert "".join(tokens) == reply.content
