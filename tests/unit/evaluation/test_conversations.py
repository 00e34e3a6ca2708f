"""Scoring a real-document conversation set: fact matching, per-turn flags, the groups,
and the set's file format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from convrag.evaluation.conversations import (
    SetTurn,
    TurnReply,
    fact_in,
    fact_in_lenient,
    load_set,
    normalise,
    reply_of,
    report_groups,
    score_turn,
    turn_record,
    workspace_for,
)
from convrag.evaluation.report import conversations_table


def _turn(kind: str = "first", **fields: Any) -> SetTurn:
    base: dict[str, Any] = {
        "question": "Where is it saved?",
        "standalone": "Where is the setting saved?",
        "follow_up": kind != "first",
        "kind": kind,
        "answerable": kind not in ("off_topic", "unanswerable"),
        "document": "a.md",
        "key_facts": ["persisted by localStorage"],
    }
    return SetTurn(**(base | fields))


def _reply(
    answer: str, *, no_answer: bool = False, sources: tuple[str, ...] | list[str] = (), **more: Any
) -> TurnReply:
    return TurnReply(
        answer=answer,
        no_answer=no_answer,
        sources=[{"title": "a", "section": None, "text": t} for t in sources],
        **more,
    )


def test_normalise_folds_case_unicode_whitespace_and_drops_citation_markers() -> None:
    assert normalise("The  ﬁle\n is   SAVED [1].") == "the file is saved ."
    assert fact_in("File is saved", "Yes: the ﬁle\nis saved [2] here.")
    assert not fact_in("file is kept", "the file is saved")


def test_a_lenient_match_needs_most_of_the_facts_words_in_their_order() -> None:
    fact = "determined by the options ``file_error`` and ``create_empty``"
    assert not fact_in(fact, "It is determined by the options file_error and create_empty.")
    assert fact_in_lenient(fact, "It is determined by the options file_error and create_empty.")
    # All five words, in order, with others between them: counted.
    assert fact_in_lenient("a b c d e", "a x b c y d e")
    # 3 of 5 words (60 %) is not enough; neither are all of them out of order.
    assert not fact_in_lenient("a b c d e", "a b c")
    assert not fact_in_lenient("a b c d e", "e d c b a")


def test_an_answer_is_useful_only_when_it_holds_every_key_fact_and_is_not_not_found() -> None:
    turn = _turn(key_facts=["persisted by localStorage", "localStorage.debug"])
    both = "Debug's enable state is persisted by localStorage [1]. Set localStorage.debug."
    flags = score_turn(turn, _reply(both, sources=[both]))
    assert flags["useful"] and flags["useful_lenient"] and flags["source_holds"]
    assert flags["facts_in_answer"] == [True, True] and not flags["wrong_not_found"]
    one = score_turn(turn, _reply("It is persisted by localStorage.", sources=[both]))
    assert not one["useful"] and one["facts_in_answer"] == [True, False]
    assert one["source_holds"]
    refused = score_turn(turn, _reply(both, no_answer=True))
    assert refused["wrong_not_found"] and not refused["useful"] and not refused["source_holds"]


def test_a_source_holds_the_facts_only_within_the_top_five() -> None:
    turn = _turn()
    sixth = ["nothing here"] * 5 + ["persisted by localStorage"]
    assert not score_turn(turn, _reply("no", sources=sixth))["source_holds"]
    # Two sources may hold a fact each.
    split = _turn(key_facts=["alpha beta", "gamma delta"])
    assert score_turn(split, _reply("", sources=["alpha beta", "gamma delta"]))["source_holds"]


def test_refusals_count_for_off_topic_and_unanswerable_turns_and_ask_back_by_its_field() -> None:
    off = score_turn(_turn("off_topic", key_facts=[]), _reply("", no_answer=True))
    assert off == {"answered": False, "refused": True}
    guessed = score_turn(_turn("unanswerable", key_facts=[]), _reply("Yes, it does."))
    assert guessed == {"answered": True, "refused": False}
    vague = _turn("underspecified", key_facts=[], readings=["CMD", "PowerShell"])
    asked_in_words = score_turn(vague, _reply("Do you mean CMD or PowerShell?"))
    assert asked_in_words["asked_back"] is False
    assert score_turn(vague, _reply("?", outcome="ask_back"))["asked_back"] is True


def _record(kind: str, follow_up: bool, reply: TurnReply) -> dict[str, Any]:
    turn = _turn(kind, follow_up=follow_up)
    if kind in ("off_topic", "unanswerable", "underspecified"):
        turn = _turn(kind, follow_up=follow_up, key_facts=[], readings=["a", "b"])
    return turn_record("c", 1, turn, reply, 0.01)


def test_the_report_splits_first_turns_from_follow_ups_and_by_kind() -> None:
    good = _reply("persisted by localStorage", sources=["persisted by localStorage"])
    held_not_quoted = _reply("Somewhere.", sources=["persisted by localStorage"])
    records = [
        _record("first", False, good),
        _record("pronoun", True, held_not_quoted),
        _record("subjectless", True, _reply("", no_answer=True)),
        _record("off_topic", True, _reply("", no_answer=True)),
        _record("underspecified", True, _reply("A guess.")),
    ]
    groups = report_groups(records)
    assert groups["all"]["useful"] == {"n": 3, "rate": 0.3333}
    assert groups["first_turns"]["useful"] == {"n": 1, "rate": 1.0}
    assert groups["follow_ups"]["useful"] == {"n": 2, "rate": 0.0}
    assert groups["all"]["quoted_when_held"] == {"n": 2, "rate": 0.5}
    assert groups["all"]["wrong_not_found"] == {"n": 3, "rate": 0.3333}
    assert groups["all"]["off_topic_refused"] == {"n": 1, "rate": 1.0}
    assert groups["all"]["unanswerable_refused"] == {"n": 0, "rate": None}
    assert groups["all"]["underspecified_asked_back"] == {"n": 1, "rate": 0.0}
    assert list(groups["by_kind"]) == [
        "first",
        "pronoun",
        "subjectless",
        "underspecified",
        "off_topic",
    ]
    table = conversations_table({**groups})
    assert "| follow-ups | 4 | 0.000 (2) |" in table and "| kind: off_topic | 1 | - |" in table


def test_a_reply_is_read_from_the_graphs_state_and_kept_readable() -> None:
    state = {
        "answer": "Use --override [1].",
        "flags": {"no_answer": False},
        "rewritten_query": "How do I override existing variables with dotenv?",
        "sources": [
            {"id": "c-1", "title": "dotenv", "section": "Run", "text": "Use --override to ..."}
        ],
    }
    reply = reply_of(state)
    assert reply.outcome is None and reply.rewrite and not reply.no_answer
    record = turn_record("dotenv-1", 2, _turn("subjectless", key_facts=["--override"]), reply, 0.2)
    # The source's id: a fit command reads the passages the turn was answered from.
    assert record["sources"] == [{"id": "c-1", "title": "dotenv", "section": "Run"}]
    assert record["useful"] and json.dumps(record)
    assert reply_of({**state, "outcome": "ask_back"}).outcome == "ask_back"


def _write_set(folder: Path, lines: list[Any]) -> Path:
    (folder / "docs").mkdir(parents=True)
    text = "\n".join(json.dumps(line) for line in lines)
    (folder / "conversations.jsonl").write_text(text + "\n")
    return folder


def test_a_set_file_is_read_and_its_mistakes_named(tmp_path: Path) -> None:
    good = {
        "id": "c1",
        "turns": [
            {
                "question": "Q?",
                "standalone": "Q?",
                "follow_up": False,
                "kind": "first",
                "answerable": True,
                "document": "a.md",
                "section": "S",
                "key_facts": ["fact"],
                "readings": [],
            }
        ],
    }
    (conversation,) = load_set(_write_set(tmp_path / "good", [good]))
    assert conversation.id == "c1" and conversation.turns[0].scored
    wrong_kind = json.loads(json.dumps(good))
    wrong_kind["turns"][0]["kind"] = "followup"
    with pytest.raises(ValueError, match=r"conversations.jsonl:1 turn 1: kind 'followup'"):
        load_set(_write_set(tmp_path / "kind", [wrong_kind]))
    no_doc = json.loads(json.dumps(good))
    no_doc["turns"][0]["document"] = None
    with pytest.raises(ValueError, match="names the document"):
        load_set(_write_set(tmp_path / "doc", [no_doc]))
    with pytest.raises(ValueError, match=r"no conversations\.jsonl"):
        load_set(tmp_path / "missing")


def test_each_set_gets_a_workspace_of_its_own() -> None:
    assert workspace_for(Path("benchmarks/realconv/dev")) == "realconv-dev"
    assert workspace_for(Path("benchmarks/realconv/Test Set")) == "realconv-test-set"


def test_eval_conversations_refuses_a_missing_set_or_a_bad_knob_before_any_work(
    tmp_path: Path,
) -> None:
    from typer.testing import CliRunner

    from convrag.cli import app

    runner = CliRunner()
    for args, problem in [
        (["--set", "feedback_weight=0.2"], "name one conversation set folder"),
        (["--set", str(tmp_path), "--set", str(tmp_path / "b")], "folders given"),
        (["--set", str(tmp_path)], "no conversations.jsonl"),
    ]:
        out = runner.invoke(app, ["eval", "conversations", *args])
        assert out.exit_code == 2 and problem in out.output, out.output
    folder = _write_set(tmp_path / "set", [])
    (folder / "conversations.jsonl").write_text(
        json.dumps(
            {
                "id": "c",
                "turns": [
                    {"question": "Q?", "follow_up": False, "kind": "off_topic", "answerable": False}
                ],
            }
        )
    )
    out = runner.invoke(app, ["eval", "conversations", "--set", str(folder), "--set", "nope=1"])
    assert out.exit_code == 2 and "--set nope: not a context knob" in out.output
