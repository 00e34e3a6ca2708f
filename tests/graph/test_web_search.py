"""Web search runs only when the policy says so, never without a key."""

from __future__ import annotations

import logging
import re

import pytest

from convrag.api.metrics import REGISTRY, observe_turn
from convrag.assistant import Assistant
from convrag.context import Context
from convrag.services import Services
from convrag.state import State
from convrag.testing.openai_stub import OpenAIStub, Reply
from convrag.testing.serper_stub import SerperReply, SerperStub


async def test_web_search_never_runs_without_a_key_even_when_requested(
    assistant: Assistant, services: Services, seeded: str
) -> None:
    assert services.web is None
    conv = await assistant.new_conversation(seeded)
    state = await assistant.ask(
        "What is the latest news today?",
        conv,
        workspace_id=seeded,
        context=Context(workspace_id=seeded, llm_model="none", web_search="on"),
    )
    assert state["web_results"] == [] and "web_search" not in state["timings"]


async def test_web_search_off_never_runs(
    assistant: Assistant, serper: SerperStub, seeded: str
) -> None:
    conv = await assistant.new_conversation(seeded)
    await assistant.ask(
        "What is the latest news today?",
        conv,
        workspace_id=seeded,
        context=Context(workspace_id=seeded, llm_model="none", web_search="off"),
    )
    assert serper.requests == []


async def test_auto_skips_the_web_when_documents_answer_confidently(
    assistant: Assistant, serper: SerperStub, seeded: str
) -> None:
    conv = await assistant.new_conversation(seeded)
    state = await assistant.ask(
        "What is Prasad Chaudhari's basic salary?",
        conv,
        workspace_id=seeded,
        context=Context(workspace_id=seeded, llm_model="none"),
    )
    assert state["retrieval_confidence"] >= 0.25
    assert serper.requests == [] and state["web_search_reason"] is None


async def _ask_for_volcano_news(
    assistant: Assistant, serper: SerperStub, workspace: str, title: str, snippet: str
) -> State:
    """A no-LLM turn with a freshness cue, answered by one Serper result of ``title``
    and ``snippet``."""
    link = "https://news.example/volcano"
    serper.add_rule(
        "latest", SerperReply(organic=[{"title": title, "link": link, "snippet": snippet}])
    )
    conv = await assistant.new_conversation(workspace)
    return await assistant.ask(
        "What is the latest volcano eruption news?",
        conv,
        workspace_id=workspace,
        context=Context(workspace_id=workspace, llm_model="none"),
    )


async def test_a_freshness_cue_triggers_web_search_and_results_become_web_sources(
    assistant: Assistant, services: Services, serper: SerperStub, seeded: str
) -> None:
    state = await _ask_for_volcano_news(
        assistant, serper, seeded, "Volcano news", "The latest eruption report was published."
    )
    assert state["web_search_reason"] == "fresh_information"
    assert serper.requests[0].api_key == "serper-test-key"
    web = [s for s in state["sources"] if s["source_type"] == "web"]
    assert web and web[0]["url"] == "https://news.example/volcano"
    turn = (await services.db.turns.all_turns(seeded, state["conversation_id"]))[-1]
    assert turn.web_search_triggered


async def test_the_answering_llm_can_call_google_search_as_a_tool(
    assistant: Assistant, llm: OpenAIStub, serper: SerperStub, services: Services, seeded: str
) -> None:
    llm.add_rule(
        lambda body: bool(body.get("tools")),
        Reply(
            tool_calls=[
                {"name": "google_search", "arguments": {"query": "Prasad Chaudhari awards"}}
            ]
        ),
    )

    def cite_the_web(body: dict[str, object]) -> str:
        prompt = str(body["messages"][-1]["content"])  # type: ignore[index]
        n = re.search(r"^\[(\d+)\] [^\n]*<https?://", prompt, re.M)
        return f"He won an award [{n.group(1) if n else 99}]."

    llm.add_rule("CURRENT QUESTION", Reply(content=cite_the_web))
    conv = await assistant.new_conversation(seeded)
    # Confidence threshold 0 and no "not found" floor: only the LLM's own tool call can
    # trigger the search.
    ctx = Context(
        workspace_id=seeded, policy={"web_confidence_threshold": 0.0, "answer_threshold": 0.0}
    )
    state = await assistant.ask(
        "Which awards did Prasad Chaudhari win?", conv, workspace_id=seeded, context=ctx
    )
    assert state["web_search_reason"] is None
    assert [r.query for r in serper.requests] == ["Prasad Chaudhari awards"]
    tool_offers = [r for r in llm.requests if r.get("tools")]
    assert tool_offers[0]["tools"][0]["function"]["name"] == "google_search"
    assert len(tool_offers) == 1  # offered once per turn
    assert state["answer"].startswith("He won an award [")
    assert state["citations"][0]["source_type"] == "web"
    turn = (await services.db.turns.all_turns(seeded, conv))[-1]
    assert turn.web_search_triggered


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        pytest.param(SerperReply(status=500), "error: ClientResponseError (HTTP 500)", id="500"),
        pytest.param(SerperReply(status=403), "error: ClientResponseError (HTTP 403)", id="403"),
        pytest.param(SerperReply(delay_s=2.0), "timeout", id="slow"),
        pytest.param(SerperReply(organic=[]), "no results", id="empty"),
    ],
)
async def test_a_failed_or_empty_web_search_is_flagged_logged_and_counted(
    assistant: Assistant,
    serper: SerperStub,
    seeded: str,
    caplog: pytest.LogCaptureFixture,
    reply: SerperReply,
    why: str,
) -> None:
    serper.add_rule(None, reply)
    conv = await assistant.new_conversation(seeded)
    before = REGISTRY.get_sample_value("convrag_fallbacks_total", {"step": "web_search"}) or 0.0
    with caplog.at_level(logging.WARNING):
        state = await assistant.ask(
            "What is the latest volcano eruption news?",
            conv,
            workspace_id=seeded,
            context=Context(workspace_id=seeded, llm_model="none", web_timeout_s=0.5),
        )
    assert state["flags"]["web_search_triggered"] is True
    assert state["flags"]["web_search_fallback"] == why
    warned = [r for r in caplog.records if r.name.startswith("convrag.nodes")]
    assert len(warned) == 1 and warned[0].levelno == logging.WARNING
    observe_turn(state, 0.1)
    after = REGISTRY.get_sample_value("convrag_fallbacks_total", {"step": "web_search"})
    assert after == before + 1


async def test_nul_bytes_in_web_results_are_dropped_and_the_turn_is_stored(
    assistant: Assistant, services: Services, serper: SerperStub, seeded: str
) -> None:
    state = await _ask_for_volcano_news(
        assistant, serper, seeded, "Volcano\u0000 news", "The latest eruption\u0000 report."
    )
    conv = state["conversation_id"]
    [web] = [s for s in state["sources"] if s["source_type"] == "web"]
    assert web["title"] == "Volcano news" and "\x00" not in web["text"]
    [turn] = await services.db.turns.all_turns(seeded, conv)
    assert turn.web_search_triggered and "\x00" not in turn.answer
