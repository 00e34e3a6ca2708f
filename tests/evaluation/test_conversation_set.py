"""``eval conversations`` end to end on a one-conversation set: the documents ingested
once, every turn played through the graph and scored, every turn kept readable."""

from __future__ import annotations

from pathlib import Path

from convrag.evaluation.conversations import evaluate_conversations
from convrag.services import Services

MINI = Path(__file__).with_name("realconv_mini")


async def test_a_conversation_set_is_played_scored_and_not_ingested_twice(
    services: Services,
) -> None:
    report = await evaluate_conversations(services, MINI)
    assert report["workspace"] == "realconv-realconv_mini" and report["llm"] == "none"
    assert [r["kind"] for r in report["records"]] == ["first", "pronoun", "off_topic"]
    first, follow_up, off_topic = report["records"]
    # The answer quotes the fact its source holds; the off-topic question is refused.
    assert first["answered"] and first["source_holds"] and first["useful"]
    assert first["sources"][0]["title"] and first["answer"]
    assert "rewrite" in follow_up and "facts_in_answer" in follow_up
    assert off_topic["refused"]
    assert report["first_turns"]["useful"] == {"n": 1, "rate": 1.0}
    assert report["all"]["off_topic_refused"] == {"n": 1, "rate": 1.0}
    assert report["follow_ups"]["turns"] == 2 and set(report["by_kind"]) == {
        "first",
        "pronoun",
        "off_topic",
    }
    again = await evaluate_conversations(services, MINI, overrides={"top_k": 3})
    assert again["ingest"]["added"] == 0 and again["ingest"]["unchanged"] == 1
    assert again["context_overrides"] == {"top_k": 3}
