"""The rewrite node: one structured LLM call per later turn, the rules when it fails or
no LLM is configured, and what the node writes and starts embedding.

LLM tests run the real langchain-openai client against the local OpenAI-compatible stub.
The strategies' own tests are in ``tests/rewriting`` (``test_rules``, ``test_llm``,
``test_fallback``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any, cast

import pytest
from langgraph.runtime import Runtime
from pydantic import SecretStr

from convrag.config import Settings
from convrag.context import Context
from convrag.nodes.rewrite import rewrite
from convrag.records import HistoryTurn
from convrag.retrieval.policy import default_policy
from convrag.services import Services
from convrag.state import RewriteUpdate, State
from convrag.testing.openai_stub import OpenAIStub, Reply

SALARY_Q = "What is Prasad Chaudhari's salary?"
SALARY_A = "Prasad Chaudhari's total salary is $120,000 [1]."
FOLLOW_UP = "What about her basic salary?"
RULES_REWRITE = "What about Prasad Chaudhari's basic salary?"
"""What the rules make of ``FOLLOW_UP`` after ``SALARY`` (no LLM, or a failed one)."""
STANDALONE = "What is the meal allowance in Europe?"


def _turn(question: str, answer: str, n: int = 1) -> HistoryTurn:
    return HistoryTurn(
        turn_number=n,
        question=question,
        answer=answer,
        contextualized_query=None,
        entities=[],
        cited_document_ids=[],
    )


SALARY = [_turn(SALARY_Q, SALARY_A)]


def _json(classification: str, query: str) -> str:
    return json.dumps({"classification": classification, "query": query})


def _is_rewrite(body: dict[str, Any]) -> bool:
    return "Latest user question" in str(body["messages"][-1]["content"])


@pytest.fixture
async def stub() -> AsyncIterator[OpenAIStub]:
    async with OpenAIStub() as server:
        yield server


async def _run(
    message: str,
    history: list[HistoryTurn],
    settings: Settings,
    stub: OpenAIStub | None,
    prefetched: list[str] | None = None,
    **ctx: Any,
) -> tuple[RewriteUpdate, list[Any]]:
    """Run the node alone; with ``stub``, the LLM is langchain-openai pointed at it. The
    queries it asks the searcher to embed ahead land in ``prefetched``."""
    if stub is not None:
        settings = settings.model_copy(
            update={
                "openai_base_url": stub.base_url,
                "openai_api_key": SecretStr("test-key"),
                "llm_model": "openai:stub-model",
            }
        )
    else:
        ctx.setdefault("llm_model", "none")
    sink = prefetched if prefetched is not None else []
    searcher = SimpleNamespace(prefetch=lambda *queries: sink.extend(queries))
    services = cast(
        Services, SimpleNamespace(settings=settings, searcher=searcher, policy=default_policy())
    )
    events: list[Any] = []
    runtime = Runtime(context=Context(services=services, **ctx), stream_writer=events.append)
    state = cast(State, {"workspace_id": "w", "question": message, "history": history})
    return await rewrite(state, runtime), events


# --------------------------------------------------------------------------------------------
# With an LLM: one structured call per later turn
# --------------------------------------------------------------------------------------------


async def test_a_second_turn_is_classified_and_rewritten_in_one_structured_call(
    settings: Settings, stub: OpenAIStub
) -> None:
    standalone = "What is Prasad Chaudhari's basic salary?"
    stub.add_rule(f"Latest user question: {FOLLOW_UP}", _json("follow_up", standalone))
    out, events = await _run(FOLLOW_UP, SALARY, settings, stub)
    assert out["classification"] == "follow_up"
    assert out["rewritten_query"] == standalone
    assert out["rewrite_method"] == "llm"
    assert "flags" not in out
    assert out["timings"]["rewrite_llm"] > 0  # the model's time, counted apart
    [request] = stub.requests
    assert _is_rewrite(request)
    assert request["temperature"] == pytest.approx(0.2)
    prompt = str(request["messages"][-1]["content"])
    assert SALARY_Q in prompt and '"classification"' in prompt
    assert events[-1]["query"] == standalone and events[-1]["method"] == "llm"


async def test_the_queries_the_search_will_use_are_embedded_ahead_of_it(
    settings: Settings, stub: OpenAIStub
) -> None:
    standalone = "What is Prasad Chaudhari's basic salary?"
    stub.add_rule(f"Latest user question: {FOLLOW_UP}", _json("follow_up", standalone))
    prefetched: list[str] = []
    await _run(FOLLOW_UP, SALARY, settings, stub, prefetched)
    # The plan of a follow-up the LLM rewrote: the rewrite and the message as typed
    # (retrieve_vectors.PLANS).
    assert prefetched == [standalone, FOLLOW_UP]
    prefetched.clear()
    await _run("thanks!", SALARY, settings, stub, prefetched)
    assert prefetched == []  # chit-chat searches nothing


async def test_a_standalone_second_turn_is_classified_standalone_by_the_llm(
    settings: Settings, stub: OpenAIStub
) -> None:
    stub.add_rule("Latest user question", _json("standalone", STANDALONE))
    out, _ = await _run(STANDALONE, SALARY, settings, stub)
    assert out["classification"] == "standalone"
    assert out["rewritten_query"] == STANDALONE
    assert out["rewrite_method"] == "llm"
    assert len(stub.requests) == 1


async def test_a_turn_the_rules_call_standalone_still_goes_to_the_llm(
    settings: Settings, stub: OpenAIStub
) -> None:
    """MTRAG: "opposition leader for the movement" has no pronoun, so the rules call it
    standalone; the LLM sees that it needs the conversation."""
    history = [
        _turn(
            "name the viceroy at the time of quit india movement",
            "The Viceroy at the time of the Quit India Movement was Lord Linlithgow.",
        )
    ]
    query = "Who was the opposition leader during the Quit India Movement?"
    stub.add_rule("Latest user question", "```json\n" + _json("follow_up", query) + "\n```")
    out, _ = await _run("opposition leader for the movement", history, settings, stub)
    assert out["classification"] == "follow_up"
    assert out["rewritten_query"] == query
    assert out["rewrite_method"] == "llm"


async def test_a_no_retrieval_verdict_keeps_the_message_as_the_query(
    settings: Settings, stub: OpenAIStub
) -> None:
    stub.add_rule("Latest user question", _json("No-Retrieval", ""))
    message = "That is very kind of you to explain"
    out, _ = await _run(message, SALARY, settings, stub)
    assert out["classification"] == "no_retrieval"
    assert out["rewritten_query"] == message
    assert out["rewrite_method"] == "llm"


async def test_a_first_turn_makes_no_llm_call(settings: Settings, stub: OpenAIStub) -> None:
    out, _ = await _run(SALARY_Q, [], settings, stub)
    assert out["classification"] == "standalone"
    assert out["rewritten_query"] == SALARY_Q
    assert out["rewrite_method"] == "unchanged"
    assert stub.requests == []


@pytest.mark.parametrize("message", ["hello, who are you?", "Thanks!", "make it shorter"])
async def test_chit_chat_after_a_turn_needs_no_retrieval_and_no_llm_call(
    settings: Settings, stub: OpenAIStub, message: str
) -> None:
    out, _ = await _run(message, SALARY, settings, stub)
    assert out["classification"] == "no_retrieval"
    assert out["rewritten_query"] == message
    assert stub.requests == []


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        pytest.param(
            Reply(content="What is Prasad Chaudhari's basic salary?"),
            "invalid: not JSON",
            id="plain-text-not-json",
        ),
        pytest.param(
            Reply(content='{"classification": "follow_up", "query": "What is'),
            "invalid: not JSON",
            id="cut-short",
        ),
        pytest.param(
            Reply(content=_json("follow_up", "   ")), "invalid: empty query", id="empty-query"
        ),
        pytest.param(
            Reply(content=json.dumps({"classification": "follow_up"})),
            "invalid: empty query",
            id="no-query",
        ),
        pytest.param(
            Reply(content=_json("clarification", "What is Prasad Chaudhari's basic salary?")),
            "invalid: classification",
            id="unknown-classification",
        ),
        pytest.param(
            Reply(content=_json("follow_up", "Prasad Chaudhari's basic salary is $80,000.")),
            "invalid: an answer, not a question",
            id="answer-like-statement",
        ),
        pytest.param(
            Reply(content=_json("follow_up", "What is Prasad Chaudhari's basic salary? " * 8)),
            "invalid: too long",
            id="too-long",
        ),
        pytest.param(Reply(empty=True), "empty", id="empty-reply"),
        pytest.param(Reply(status=500), "error", id="http-500"),
    ],
)
async def test_an_invalid_llm_reply_falls_back_to_the_rules_rewrite_and_says_why(
    settings: Settings, stub: OpenAIStub, reply: Reply, reason: str
) -> None:
    stub.add_rule("Latest user question", reply)
    out, events = await _run(FOLLOW_UP, SALARY, settings, stub)
    assert out["rewritten_query"] == RULES_REWRITE  # as no LLM
    assert out["rewrite_method"] == "fallback"
    assert out["classification"] == "follow_up"  # the rules' verdict
    assert out["flags"]["rewrite_fallback"].startswith(reason)
    assert out["errors"]["rewrite"].startswith(reason)
    assert events[-1]["method"] == "fallback"
    assert len(stub.requests) == 1
    assert "rewrite_llm" in out["timings"]


async def test_a_slow_llm_falls_back_within_the_rewrite_time_limit(
    settings: Settings, stub: OpenAIStub
) -> None:
    stub.add_rule("Latest user question", Reply(delay_s=2.0))
    out, _ = await _run(FOLLOW_UP, SALARY, settings, stub, rewrite_timeout_s=0.3)
    assert out["rewritten_query"] == RULES_REWRITE
    assert out["flags"]["rewrite_fallback"] == "timeout"


async def test_a_failed_standalone_rewrite_keeps_the_question_as_the_rules_do(
    settings: Settings, stub: OpenAIStub
) -> None:
    stub.add_rule("Latest user question", Reply(status=500))
    out, _ = await _run(STANDALONE, SALARY, settings, stub)
    assert (out["classification"], out["rewritten_query"]) == ("standalone", STANDALONE)
    assert out["rewrite_method"] == "fallback"


async def test_the_providers_error_text_stays_out_of_the_flag_but_its_status_is_kept(
    settings: Settings, stub: OpenAIStub, caplog: pytest.LogCaptureFixture
) -> None:
    stub.add_rule("Latest user question", Reply(status=500, error_message="boom from stub"))
    out, _ = await _run(FOLLOW_UP, SALARY, settings, stub)
    why = out["flags"]["rewrite_fallback"]
    assert why.startswith("error: ") and why.endswith(" (HTTP 500)") and "boom" not in why
    assert "boom from stub" in caplog.text  # the server log has it in full


async def test_a_base_url_without_an_api_key_reaches_a_local_server(
    settings: Settings, stub: OpenAIStub
) -> None:
    standalone = "What is Prasad Chaudhari's basic salary?"
    stub.add_rule("Latest user question", _json("follow_up", standalone))
    local = settings.model_copy(
        update={
            "openai_base_url": stub.base_url,
            "openai_api_key": None,
            "llm_model": "openai:stub-model",
        }
    )
    out, _ = await _run(FOLLOW_UP, SALARY, local, None, llm_model=None)
    assert (out["rewrite_method"], out["rewritten_query"]) == ("llm", standalone)
