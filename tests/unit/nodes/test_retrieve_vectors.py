"""The multi-query fusion and the queries a turn searches (no stores: plain hits)."""

from __future__ import annotations

import pytest

from convrag.context import Context
from convrag.fusion import QueryList, fuse_queries
from convrag.nodes.retrieve_vectors import keyword_candidate, plan_queries, turn_kind
from convrag.search import SearchResult


def _hits(*ids: str, doc: str | None = None) -> list[SearchResult]:
    return [SearchResult(i, doc or f"d{i}", i, 1.0 / (n + 1)) for n, i in enumerate(ids)]


def _ids(results: list[SearchResult]) -> list[str]:
    return [r.chunk_id for r in results]


def test_a_bad_rewrite_cannot_push_the_raw_questions_hits_out() -> None:
    """The raw list's first hit stays near the top whatever the rewrite found."""
    raw = QueryList("raw", _hits("gold", "a", "b"), 1.0)
    rewrite = QueryList("rewrite", _hits(*(f"junk{i}" for i in range(20))), 1.0)
    fused = _ids(fuse_queries([rewrite, raw]))
    assert fused.index("gold") <= 1


def test_a_hit_both_queries_find_ranks_first_and_scores_one() -> None:
    fused = fuse_queries(
        [QueryList("rewrite", _hits("x", "y"), 2.0), QueryList("raw", _hits("x", "z"), 1.0)]
    )
    assert fused[0].chunk_id == "x"
    assert fused[0].score == pytest.approx(1.0)


def test_a_single_list_comes_back_with_its_own_scores() -> None:
    hits = _hits("a", "b")
    assert fuse_queries([QueryList("raw", hits, 1.0), QueryList("history", [], 1.0)]) == hits
    assert fuse_queries([QueryList("raw", hits, 0.0)]) == []


def test_a_chunk_keeps_the_fields_of_the_list_whose_query_is_shown() -> None:
    shown = SearchResult("a", "da", "a", 0.1, dense_score=0.9)
    other = SearchResult("a", "da", "a", 0.1, dense_score=0.2)
    fused = fuse_queries([QueryList("rewrite", [shown], 1.0), QueryList("raw", [other], 1.0)])
    assert fused[0].dense_score == 0.9


def test_anchoring_is_one_more_voice_not_a_flat_boost() -> None:
    """An anchored hit moves up past hits it was level with, but one far down both lists
    does not jump above a hit both lists put first."""
    level = [QueryList("raw", _hits("top", "b", "z"), 1.0)]
    level.append(QueryList("history", _hits("top", "z", "b"), 1.0))
    assert _ids(fuse_queries(level)) == ["top", "b", "z"]
    anchored = fuse_queries(level, anchor_document_ids={"dz"}, anchor_weight=0.5)
    assert _ids(anchored).index("z") < _ids(anchored).index("b")
    assert [r.anchored for r in anchored] == [r.chunk_id == "z" for r in anchored]
    deep = _hits("top", *(f"f{i}" for i in range(28)), "z")
    far = [QueryList("raw", deep, 1.0), QueryList("history", deep, 1.0)]
    assert _ids(fuse_queries(far, anchor_document_ids={"dz"}, anchor_weight=0.5))[0] == "top"
    assert fuse_queries(level, anchor_document_ids={"dz"})[2].anchored  # weight 0: flag only


def test_the_keyword_top_hit_below_the_sources_is_the_candidate_for_a_second_look() -> None:
    """BM25's first hit, ranked below the five sources or cut from the fused list, is
    the one ``merge_context`` weighs before "not found"; among the sources, none is."""
    fused = _hits(*(f"d{i}" for i in range(8)))
    option = SearchResult("option", "dopt", "--sandbox: ...", 0.001, bm25_rank=1)
    assert keyword_candidate(fused, option, 5) == option
    assert keyword_candidate([*fused, option], option, 5) == option
    assert keyword_candidate([*fused[:3], option, *fused[3:]], option, 5) is None
    assert keyword_candidate(fused, None, 5) is None


def test_fusion_refuses_negative_weights() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        fuse_queries([QueryList("raw", _hits("a"), -1.0)])


def test_a_first_turn_searches_its_query_alone() -> None:
    planned = plan_queries("What is RAG?", "What is RAG?", "first_turn", Context())
    assert [(q.name, q.text, q.mixed) for q in planned] == [("raw", "What is RAG?", False)]


def test_a_standalone_turn_with_history_searches_its_message_mixed_with_the_history() -> None:
    planned = plan_queries(
        "Tell me about tomatoes", "Tell me about tomatoes", "standalone", Context()
    )
    assert [(q.name, q.mixed, q.weight) for q in planned] == [("message", True, 1.0)]
    both = plan_queries("Tell me", "Tell me", "standalone", Context(standalone_raw_query=True))
    assert [(q.name, q.mixed) for q in both] == [("raw", False), ("message", True)]


def test_the_history_query_is_the_message_and_the_previous_question() -> None:
    planned = plan_queries("Is it free?", "Is it free?", "follow_up", Context(), "What is Db2?")
    assert [(q.name, q.text) for q in planned] == [
        ("raw", "Is it free?"),
        ("history", "Is it free? What is Db2?"),
    ]


def test_a_rewritten_follow_up_searches_the_rewrite_the_raw_question_and_the_history() -> None:
    ctx = Context(rewrite_query_weight=2.0, raw_query_weight=1.0, history_query_weight=0.5)
    planned = plan_queries(
        "What about her basic salary?",
        "What is Prasad Chaudhari's basic salary?",
        "follow_up",
        ctx,
    )
    assert [(q.name, q.mixed, q.weight) for q in planned] == [
        ("rewrite", True, 2.0),
        ("raw", False, 1.0),
        ("history", True, 0.5),
    ]
    assert planned[0].text == "What is Prasad Chaudhari's basic salary?"


def test_a_follow_up_the_llm_rewrote_searches_its_rewrite_and_the_raw_question_only() -> None:
    ctx = Context(llm_rewrite_query_weight=1.5, rewrite_query_weight=0.5)
    planned = plan_queries(
        "What about her basic salary?",
        "What is Prasad Chaudhari's basic salary?",
        "llm_follow_up",
        ctx,
        "Who is Prasad Chaudhari?",
    )
    assert [(q.name, q.mixed, q.weight) for q in planned] == [
        ("rewrite", True, 1.5),
        ("raw", False, 1.0),
    ]


@pytest.mark.parametrize(
    ("history", "classification", "method", "kind"),
    [
        (False, "follow_up", "llm", "first_turn"),
        (True, "standalone", "llm", "standalone"),
        (True, "follow_up", "rules", "follow_up"),
        (True, "follow_up", "fallback", "follow_up"),
        (True, "follow_up", "llm", "llm_follow_up"),
    ],
)
def test_only_a_follow_up_the_llm_rewrote_takes_the_llm_plan(
    history: bool, classification: str, method: str, kind: str
) -> None:
    state = {
        "history": [{"question": "Who is she?"}] if history else [],
        "classification": classification,
        "rewrite_method": method,
    }
    assert turn_kind(state) == kind  # type: ignore[arg-type]


def test_a_follow_up_without_words_of_its_own_searches_its_rewrite_and_history_not_itself() -> None:
    planned = plan_queries(
        "Why?", "What is the meal allowance?", "follow_up", Context(), "What is the allowance?"
    )
    assert [(q.name, q.text) for q in planned] == [
        ("rewrite", "What is the meal allowance?"),
        ("history", "Why? What is the allowance?"),
    ]


def test_lists_of_weight_zero_are_left_out_but_never_all_of_them() -> None:
    ctx = Context(raw_query_weight=0.0, history_query_weight=0.0)
    planned = plan_queries("Is it free?", "Is it free?", "follow_up", ctx)
    assert [(q.name, q.mixed, q.weight) for q in planned] == [("raw", False, 1.0)]
    assert [q.name for q in plan_queries("Is it free?", "Is it free?", "follow_up", Context())] == [
        "raw",
        "history",
    ]
