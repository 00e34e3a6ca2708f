"""End-to-end turns through the real graph, Postgres checkpoints and Milvus Lite."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from convrag.assistant import Assistant
from convrag.context import Context
from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub, Reply
from tests.graph.conftest import doc_id
from tests.nodes.test_rewrite import RULES_REWRITE

NO_LLM = Context(llm_model="none")


async def test_her_basic_salary_cites_the_employee_doc_after_one_regeneration(
    assistant: Assistant, services: Services, seeded: str
) -> None:
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    first = await assistant.ask(
        "What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=ctx
    )
    assert "$120,000" in first["answer"]
    second = await assistant.ask(
        "What about her basic salary?", conv, workspace_id=seeded, context=ctx
    )
    assert second["classification"] == "follow_up"
    assert "Prasad Chaudhari" in second["rewritten_query"]
    assert "basic salary" in second["rewritten_query"].lower()
    assert "$80,000" in second["answer"] and "John Doe" not in second["answer"]
    # The draft repeats the name the question asks about through "her"; one extractive
    # regeneration shows nothing else can be left out, so a second is not run.
    assert second["regenerations"] == 1
    assert second["flags"]["repetition_unresolved"] is True
    employee = await doc_id(services, seeded, "employee_data.txt")
    assert second["citations"] and second["citations"][0]["document_id"] == employee
    assert second["anchor_document_ids"] == [employee]
    turns = await services.db.turns.all_turns(seeded, conv)
    assert [t.contextualized_query for t in turns][1] == second["rewritten_query"]
    stored = await services.db.transcripts.citations(seeded, turns[1].id)
    assert stored and stored[0]["document_id"] == employee


async def test_three_turn_engineers_conversation_keeps_both_names(
    assistant: Assistant, llm: OpenAIStub, seeded: str
) -> None:
    """Seed 000's scenario 2: the answers name the engineers, the rules rewrite resolves
    "their" and the ellipsis of "Who earns more?" to both names."""
    llm.add_rule(
        "CURRENT QUESTION:\nWho are the software engineers?",
        Reply(content="Prasad Chaudhari and John Doe are software engineers [1]."),
    )
    llm.add_rule(
        "CURRENT QUESTION:\nWhat are their salaries?",
        Reply(content="Prasad: $120,000, John: $110,000 [1]."),
    )
    llm.add_rule("CURRENT QUESTION", Reply(content="Prasad Chaudhari earns more [1]."))
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, rewrite_model="none")
    await assistant.ask("Who are the software engineers?", conv, workspace_id=seeded, context=ctx)
    second = await assistant.ask("What are their salaries?", conv, workspace_id=seeded, context=ctx)
    third = await assistant.ask("Who earns more?", conv, workspace_id=seeded, context=ctx)
    for state in (second, third):
        assert state["classification"] == "follow_up"
        assert state["rewrite_method"] == "rules"
        assert "Prasad Chaudhari" in state["rewritten_query"]
        assert "John Doe" in state["rewritten_query"]
    assert second["sources"][0]["title"] == "employee_data"


async def test_answer_sentences_bounds_the_extractive_answer(
    assistant: Assistant, seeded: str
) -> None:
    question = "Who are the software engineers?"
    answers = []
    for most in (1, 3):
        conv = await assistant.new_conversation(seeded)
        ctx = Context(workspace_id=seeded, llm_model="none", answer_sentences=most)
        state = await assistant.ask(question, conv, workspace_id=seeded, context=ctx)
        answers.append(state["answer"])
    assert answers[0].count("[") == 1
    assert answers[1].count("[") > 1
    assert answers[0].split(" [")[0] in answers[1]  # the best sentence, then more


async def test_a_continuation_searches_the_previous_question_as_the_page_shows_it(
    assistant: Assistant, seeded: str
) -> None:
    """Not a glued string: the query shown is the one used, and one a user can read."""
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    await assistant.ask("Who are the software engineers?", conv, workspace_id=seeded, context=ctx)
    state = await assistant.ask(
        "Can you elaborate more on that?", conv, workspace_id=seeded, context=ctx
    )
    assert state["rewritten_query"] == "Who are the software engineers?"


def _sections(state: dict[str, object]) -> set[int]:
    found = set()
    for src in state["sources"]:  # type: ignore[attr-defined]
        for n in range(1, 7):
            if f"Section {n}." in src["text"]:
                found.add(n)
    return found


async def test_vague_follow_up_stays_on_topic_a_and_an_explicit_shift_moves_to_topic_b(
    assistant: Assistant, services: Services, seeded: str
) -> None:
    """Seed 003's manual test: one document, Topic A in sections 1-3, Topic B in 4-6."""
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none", top_k=3)
    handbook = await doc_id(services, seeded, "handbook.md")
    first = await assistant.ask(
        "How do pyroclastic flows and volcanic eruptions work?",
        conv,
        workspace_id=seeded,
        context=ctx,
    )
    assert _sections(first) and _sections(first) <= {1, 2, 3}
    second = await assistant.ask(
        "Can you elaborate more on that?", conv, workspace_id=seeded, context=ctx
    )
    assert second["classification"] == "follow_up"
    assert second["anchor_document_ids"] == [handbook]
    assert _sections(second) and _sections(second) <= {1, 2, 3}
    third = await assistant.ask(
        "Now tell me about growing tomatoes", conv, workspace_id=seeded, context=ctx
    )
    assert third["classification"] == "standalone"
    assert _sections(third) and _sections(third) <= {4, 5, 6}


async def test_a_second_turn_is_classified_and_rewritten_by_one_structured_llm_call(
    assistant: Assistant, llm: OpenAIStub, seeded: str
) -> None:
    """The first turn has nothing to resolve and makes no rewrite call; the second makes
    one, at the rewrite temperature, and its JSON query is what retrieval and the answer
    prompt use."""
    llm.add_rule(
        "Latest user question: What about her basic salary?",
        Reply(
            content='{"classification": "follow_up", '
            '"query": "What is Prasad Chaudhari\'s basic salary?"}'
        ),
    )
    llm.add_rule("CURRENT QUESTION", Reply(content="Her basic salary is $80,000 [1]."))
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded)
    await assistant.ask(
        "What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=ctx
    )
    state = await assistant.ask(
        "What about her basic salary?", conv, workspace_id=seeded, context=ctx
    )
    assert state["classification"] == "follow_up"
    assert state["rewrite_method"] == "llm"
    assert state["rewritten_query"] == "What is Prasad Chaudhari's basic salary?"
    rewrites = [
        r for r in llm.requests if "Latest user question" in str(r["messages"][-1]["content"])
    ]
    assert len(rewrites) == 1
    assert rewrites[0]["temperature"] == pytest.approx(ctx.rewrite_temperature)
    assert "Prasad Chaudhari's salary" in str(rewrites[0]["messages"][-1]["content"])
    assert "What is Prasad Chaudhari's basic salary?" in str(
        llm.last_request["messages"][-1]["content"]
    )
    assert "$80,000" in str(llm.last_request["messages"][-1]["content"])  # retrieved by it
    assert state["answer"] == "Her basic salary is $80,000 [1]."


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (Reply(status=500), "error"),
        (Reply(delay_s=2.0), "timeout"),
        (Reply(empty=True), "empty"),
        (Reply(content="What is Prasad Chaudhari's basic salary?"), "invalid: not JSON"),
    ],
    ids=["http-500", "timeout", "empty", "not-json"],
)
async def test_a_failed_rewrite_falls_back_to_the_rules_rewrite(
    assistant: Assistant, llm: OpenAIStub, seeded: str, reply: Reply, reason: str
) -> None:
    """A failing LLM resolves a follow-up as the no-LLM path does, not worse: the search
    gets the name, so the answer quotes the right record."""
    llm.add_rule("Latest user question", reply)
    conv = await assistant.new_conversation(seeded)
    # Only the timeout case waits out its limit: on a loaded machine a stub's prompt
    # reply may take longer than half a second, which is no failure of the others.
    ctx = Context(workspace_id=seeded, rewrite_timeout_s=0.5 if reason == "timeout" else 30.0)
    await assistant.ask(
        "What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=ctx
    )
    state = await assistant.ask(
        "What about her basic salary?", conv, workspace_id=seeded, context=ctx
    )
    assert state["rewritten_query"] == RULES_REWRITE
    assert state["rewrite_method"] == "fallback"
    assert state["classification"] == "follow_up"  # the rules' classification
    assert state["flags"]["rewrite_fallback"].startswith(reason)
    assert "Prasad Chaudhari" in state["sources"][0]["text"]
    assert state["answer"]  # the turn still completes


async def test_a_run_without_its_own_context_takes_the_time_limits_of_the_environment(
    assistant: Assistant,
    llm: OpenAIStub,
    services: Services,
    seeded: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``REWRITE_TIMEOUT_S`` (here 0.5 s) bounds the rewrite call of a run started with no
    context, as the service's and the CLI's are."""
    limited = services.settings.model_copy(update={"rewrite_timeout_s": 0.5})
    monkeypatch.setattr(services, "settings", limited)
    llm.add_rule("Latest user question", Reply(delay_s=2.0))
    conv = await assistant.new_conversation(seeded)
    await assistant.ask("What is Prasad Chaudhari's salary?", conv, workspace_id=seeded)
    state = await assistant.ask("What about her basic salary?", conv, workspace_id=seeded)
    assert state["flags"]["rewrite_fallback"] == "timeout"
    assert state["rewritten_query"] == RULES_REWRITE


async def test_an_llm_failure_during_synthesis_gives_the_flagged_extractive_answer(
    assistant: Assistant, llm: OpenAIStub, services: Services, seeded: str
) -> None:
    llm.add_rule("CURRENT QUESTION", Reply(status=500, error_message="boom from stub"))
    conv = await assistant.new_conversation(seeded)
    state = await assistant.ask(
        "What is Prasad Chaudhari's basic salary?",
        conv,
        workspace_id=seeded,
        context=Context(workspace_id=seeded),
    )
    assert "$80,000" in state["answer"] and "[1]" in state["answer"]
    # The error's type and status, never the provider's own words.
    why = state["flags"]["extractive_fallback"]
    assert why.startswith("error: ") and why.endswith(" (HTTP 500)") and "boom" not in why
    turns = await services.db.turns.all_turns(seeded, conv)
    assert turns[-1].metadata.flags["extractive_fallback"]


async def test_unresolved_citation_markers_are_removed_and_never_stored(
    assistant: Assistant, llm: OpenAIStub, services: Services, seeded: str
) -> None:
    llm.add_rule("CURRENT QUESTION", Reply(content="Basic is $80,000 [1] and bonus [9]."))
    conv = await assistant.new_conversation(seeded)
    state = await assistant.ask(
        "What is Prasad Chaudhari's basic salary?",
        conv,
        workspace_id=seeded,
        context=Context(workspace_id=seeded),
    )
    assert state["answer"] == "Basic is $80,000 [1] and bonus."
    assert state["flags"]["unresolved_markers"] == 1
    turn = (await services.db.turns.all_turns(seeded, conv))[-1]
    assert "[9]" not in turn.answer
    stored = await services.db.transcripts.citations(seeded, turn.id)
    assert [c["marker"] for c in stored or []] == ["[1]"]


async def test_the_regenerate_loop_stops_at_its_bound_and_flags_the_turn(
    assistant: Assistant, llm: OpenAIStub, services: Services, seeded: str
) -> None:
    same = "Netflix, Amazon Studios and HBO Max lead here [1]."
    llm.add_rule("CURRENT QUESTION", Reply(content=same))
    conv = await assistant.new_conversation(seeded)
    # The seeded documents do not cover streaming: without answer_threshold=0 the turn
    # would answer "not found" before the LLM is asked.
    ctx = Context(workspace_id=seeded, max_regenerations=2, policy={"answer_threshold": 0.0})
    await assistant.ask(
        "Who are the top streaming executives?", conv, workspace_id=seeded, context=ctx
    )
    state = await assistant.ask(
        "Which studios should I pitch to?", conv, workspace_id=seeded, context=ctx
    )
    assert state["regenerations"] == 2
    assert state["repetition"]["is_repetitive"]
    assert state["flags"]["repetition_unresolved"] is True
    exclusion_prompts = [
        r for r in llm.requests if "DO NOT mention them again" in str(r["messages"][-1]["content"])
    ]
    assert len(exclusion_prompts) == 2
    assert "Netflix" in str(exclusion_prompts[0]["messages"][-1]["content"])
    turn = (await services.db.turns.all_turns(seeded, conv))[-1]
    assert turn.repetition_detected


async def test_a_new_answer_after_one_regeneration_ends_the_loop(
    assistant: Assistant, llm: OpenAIStub, seeded: str
) -> None:
    llm.add_rule("DO NOT mention them again", Reply(content="Try Apple TV and Paramount [1]."))
    llm.add_rule("CURRENT QUESTION", Reply(content="Netflix, Amazon Studios and HBO Max [1]."))
    conv = await assistant.new_conversation(seeded)
    # streaming is not in the docs
    ctx = Context(workspace_id=seeded, policy={"answer_threshold": 0.0})
    await assistant.ask(
        "Who are the top streaming executives?", conv, workspace_id=seeded, context=ctx
    )
    state = await assistant.ask(
        "Which studios should I pitch to?", conv, workspace_id=seeded, context=ctx
    )
    assert state["regenerations"] == 1
    assert state["answer"] == "Try Apple TV and Paramount [1]."
    assert state["flags"]["repetition_unresolved"] is False


async def test_a_run_that_crashed_inside_synthesize_resumes_without_a_duplicate_turn(
    assistant: Assistant, services: Services, seeded: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    synth = importlib.import_module("convrag.nodes._drafting")

    real = synth.extract_entities
    calls = {"n": 0}

    def crash_once(text: str) -> list[str]:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("simulated crash inside synthesize")
        return real(text)

    monkeypatch.setattr(synth, "extract_entities", crash_once)
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="none")
    with pytest.raises(RuntimeError, match="simulated crash"):
        await assistant.ask(
            "What is Prasad Chaudhari's basic salary?", conv, workspace_id=seeded, context=ctx
        )
    assert await services.db.turns.all_turns(seeded, conv) == []
    snapshot = await assistant.graph.aget_state(assistant.config(conv))  # type: ignore[arg-type]
    assert snapshot.next == ("synthesize",)
    resumed = await assistant.graph.ainvoke(
        None,
        assistant.config(conv),  # type: ignore[arg-type]
        context=ctx,
        durability="exit",
    )
    assert "$80,000" in resumed["answer"]
    # Re-running persist (a crash after its commit) must not write the turn twice either.
    from convrag.nodes.persist import persist

    class _Rt:
        context = replace(ctx, services=services)

        @staticmethod
        def stream_writer(_: object) -> None:
            return None

    again = await persist(resumed, _Rt())  # type: ignore[arg-type]
    assert again["persisted"] is False
    turns = await services.db.turns.all_turns(seeded, conv)
    assert len(turns) == 1 and turns[0].id == resumed["turn_id"]


async def test_a_conversation_of_another_workspace_is_refused_by_the_graph(
    assistant: Assistant, services: Services, seeded: str, caplog: pytest.LogCaptureFixture
) -> None:
    conv = await assistant.new_conversation(seeded)
    await assistant.ask(
        "What is Prasad Chaudhari's salary?",
        conv,
        workspace_id=seeded,
        context=Context(workspace_id=seeded, llm_model="none"),
    )
    other = seeded + "-b"
    caplog.set_level(logging.INFO, logger="convrag.assistant")
    with pytest.raises(PermissionError, match="not in workspace"):
        await assistant.ask(
            "What about her basic salary?",
            conv,
            workspace_id=other,
            context=Context(workspace_id=other, llm_model="none"),
        )
    # The request's fault, not the service's: logged once, without a traceback.
    logged = [r for r in caplog.records if r.name == "convrag.assistant"]
    assert logged and all(r.levelno < logging.WARNING and not r.exc_info for r in logged)
    assert len(await services.db.turns.all_turns(seeded, conv)) == 1
    assert await services.db.turns.all_turns(other, conv) == []


async def test_an_answered_turn_writes_nothing_to_the_vector_index(
    assistant: Assistant, services: Services, seeded: str
) -> None:
    """Retrieval reads only the documents' chunks, so a turn embeds nothing of its own
    (conversation memory, one embedding and one Milvus write per turn, was removed)."""
    conv = await assistant.new_conversation(seeded)
    await assistant.ask(
        "What is Prasad Chaudhari's salary?",
        conv,
        workspace_id=seeded,
        context=Context(workspace_id=seeded, llm_model="none"),
    )
    await services.drain()
    rows = services.index.client.query(
        services.index.collection,
        filter=f'conversation_id == "{conv}"',
        output_fields=["chunk_id"],
    )
    assert rows == []


async def test_an_llm_model_that_cannot_be_built_falls_back_instead_of_failing_the_turn(
    assistant: Assistant, services: Services, seeded: str
) -> None:
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded, llm_model="nonexistent:model")
    await assistant.ask(
        "What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=ctx
    )
    state = await assistant.ask(
        "What about her basic salary?", conv, workspace_id=seeded, context=ctx
    )
    assert state["rewritten_query"] == RULES_REWRITE
    assert state["flags"]["rewrite_fallback"] == "error: ValueError"
    assert state["flags"]["extractive_fallback"] == "error: ValueError"
    assert "$80,000" in state["answer"]
    assert [t.status for t in await services.db.turns.all_turns(seeded, conv)] == ["done", "done"]


async def test_nul_bytes_and_lone_surrogates_in_the_llm_answer_are_dropped_not_fatal(
    assistant: Assistant, llm: OpenAIStub, services: Services, seeded: str
) -> None:
    llm.add_rule("CURRENT QUESTION", Reply(content="Her basic\x00 salary is $80,000\ud800 [1]."))
    conv = await assistant.new_conversation(seeded)
    state = await assistant.ask(
        "What is Prasad Chaudhari's basic salary?",
        conv,
        workspace_id=seeded,
        context=Context(workspace_id=seeded),
    )
    assert state["answer"] == "Her basic salary is $80,000 [1]."
    assert "extractive_fallback" not in state["flags"]
    [turn] = await services.db.turns.all_turns(seeded, conv)
    assert turn.answer == state["answer"]


async def test_chit_chat_gets_its_fixed_reply_without_an_llm_call(
    assistant: Assistant, llm: OpenAIStub, seeded: str
) -> None:
    from convrag.answering.replies import THANKS_ANSWER

    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded)
    await assistant.ask(
        "What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=ctx
    )
    asked = len(llm.requests)
    state = await assistant.ask("thanks!", conv, workspace_id=seeded, context=ctx)
    assert state["answer"] == THANKS_ANSWER
    assert len(llm.requests) == asked


async def test_a_stream_stopped_early_fails_its_turn_and_the_next_message_goes_through(
    assistant: Assistant, services: Services, seeded: str
) -> None:
    from convrag.assistant import STOPPED_TURN

    conv = await assistant.new_conversation(seeded)
    stream = assistant.stream("What is Prasad Chaudhari's salary?", conv, workspace_id=seeded)
    async for mode, chunk in stream:
        if mode == "custom" and chunk.get("event") == "sources":
            break
    await stream.aclose()
    state = await assistant.ask("What is John Doe's salary?", conv, workspace_id=seeded)
    assert "$110,000" in state["answer"]
    turns = await services.db.transcripts.turn_details(seeded, conv)
    assert [(t.status, t.error) for t in turns] == [("failed", STOPPED_TURN), ("done", None)]


async def test_a_cancelled_ask_fails_its_turn_instead_of_keeping_the_conversation_busy(
    assistant: Assistant, llm: OpenAIStub, services: Services, seeded: str
) -> None:
    import asyncio

    llm.add_rule("CURRENT QUESTION:\nWhat is Prasad", Reply(content="Slowly. [1]", delay_s=5.0))
    conv = await assistant.new_conversation(seeded)
    ctx = Context(workspace_id=seeded)
    asked = asyncio.create_task(
        assistant.ask("What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=ctx)
    )
    while not llm.requests:  # the answer's LLM call has started
        await asyncio.sleep(0.05)
    asked.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asked
    llm.add_rule("CURRENT QUESTION:\nWhat is John", Reply(content="It is $110,000 [1]."))
    state = await assistant.ask(
        "What is John Doe's salary?", conv, workspace_id=seeded, context=ctx
    )
    assert state["answer"] == "It is $110,000 [1]."
    assert [t.status for t in await services.db.transcripts.turn_details(seeded, conv)] == [
        "failed",
        "done",
    ]


async def test_the_workspace_argument_sets_a_context_that_names_none_and_may_not_disagree(
    assistant: Assistant, seeded: str
) -> None:
    conv = await assistant.new_conversation(seeded)
    state = await assistant.ask(
        "What is Prasad Chaudhari's salary?", conv, workspace_id=seeded, context=Context(top_k=1)
    )
    assert "$120,000" in state["answer"] and len(state["sources"]) == 1
    with pytest.raises(ValueError, match="differ"):
        await assistant.ask(
            "And John Doe's?", conv, workspace_id=seeded, context=Context(workspace_id="other")
        )
    with pytest.raises(ValueError, match="workspace"):
        await assistant.new_conversation("bad ws!")
