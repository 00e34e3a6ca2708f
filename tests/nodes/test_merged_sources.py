"""The "not found" decision of the merged sources: the probability of the fitted model
over the signals (the closest source sentence among them)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from convrag.context import Context
from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.nodes.synthesize import merged_sources
from convrag.services import Services
from convrag.state import State

MEALS = (
    "Travel policy. The meal allowance in Europe is 60 euros per day. "
    "The meal allowance in North America is 70 dollars per day. "
    "Receipts are kept for seven years."
)


@pytest.fixture
async def meals(services: Services, workspace: str, tmp_path: Path) -> str:
    """A workspace holding one travel-policy document."""
    doc = tmp_path / "travel.md"
    doc.write_text(MEALS)
    await ingest_documents(services, workspace, load_path(doc, max_bytes=10**6))
    return workspace


async def _merged(
    services: Services,
    workspace: str,
    question: str,
    history: tuple[str, ...] = (),
    classification: str = "standalone",
    **knobs: float,
) -> dict:
    hits = await services.searcher.search(workspace, question, top_k=10)
    state = cast(
        State,
        {
            "workspace_id": workspace,
            "question": question,
            "vector_hits": [h.as_source() for h in hits],
            "document_hits": [],
            "classification": classification,
            "history": [
                {
                    "turn_number": n,
                    "question": q,
                    "answer": "An answer.",
                    "contextualized_query": None,
                    "entities": [],
                    "cited_document_ids": [],
                }
                for n, q in enumerate(history, 1)
            ],
        },
    )
    # Every turn's sentences weighed, as a recording does, unless a test says otherwise.
    policy = {"sentence_band": 1.0, **knobs}
    ctx = Context(workspace_id=workspace, services=services, web_search="off", policy=policy)
    return dict(await merged_sources(state, ctx))


async def test_a_question_a_sentence_answers_is_not_refused_and_one_none_does_is(
    services: Services, meals: str
) -> None:
    answered = await _merged(services, meals, "What is the meal allowance in Europe?")
    assert answered["abstain"] is False and "embed_sentences" in answered["timings"]
    refused = await _merged(services, meals, "What is the capital of France?")
    assert refused["abstain"] is True


async def test_sentences_far_from_the_threshold_are_not_weighed_and_decide_the_same(
    services: Services, meals: str
) -> None:
    """With no band the chunk's cosine stands in for the closest sentence's and nothing is
    embedded; the decision is the one the sentences give."""
    for question, refused in (
        ("What is the meal allowance in Europe?", False),
        ("What is the capital of France?", True),
    ):
        weighed = await _merged(services, meals, question)
        skipped = await _merged(services, meals, question, sentence_band=0.0)
        assert weighed["abstain"] is skipped["abstain"] is refused
        assert "embed_sentences" not in skipped["timings"]
        signals = skipped["abstention_signals"]
        assert signals["sentence"] == signals["confidence"] == signals["paragraph"]


async def test_a_zero_threshold_never_refuses_and_weighs_no_sentences(
    services: Services, meals: str
) -> None:
    merged = await _merged(services, meals, "What is the capital of France?", answer_threshold=0.0)
    assert merged["abstain"] is False and "embed_sentences" not in merged["timings"]
    assert merged["abstention_signals"] is None  # nothing weighed


async def test_the_signals_behind_the_decision_are_recorded_with_it(
    services: Services, meals: str
) -> None:
    answered = await _merged(services, meals, "What is the meal allowance in Europe?")
    refused = await _merged(services, meals, "What is the capital of France?")
    a, r = answered["abstention_signals"], refused["abstention_signals"]
    assert set(a) == {
        "confidence",
        "sentence",
        "paragraph",
        "rarest",
        "every_term",
        "follow_up",
        "bm25",
        "later",
        "margin",
        "agreement",
        "coverage",
        "null_mean",
        "null_spread",
        "probability",
    }
    assert a["sentence"] > r["sentence"] and r["rarest"] > a["rarest"] == 0.0
    assert a["follow_up"] == r["follow_up"] == 0.0
    assert a["probability"] > r["probability"]
    assert a["null_mean"] == r["null_mean"] and a["null_spread"] > 0  # one workspace, one null


async def test_a_decision_close_to_the_threshold_is_marked_low_confidence(
    services: Services, meals: str
) -> None:
    question = "What is the meal allowance in Europe?"
    clear = await _merged(services, meals, question, confidence_margin=0.01)
    probability = clear["abstention_signals"]["probability"]
    assert clear["flags"] == {} and clear["abstain"] is False
    close = await _merged(services, meals, question, answer_threshold=probability - 0.005)
    assert close["flags"] == {"low_confidence": True} and close["abstain"] is False
    off_topic = "What is the capital of France?"
    far = await _merged(services, meals, off_topic, confidence_margin=0.01)
    below = far["abstention_signals"]["probability"]
    assert far["flags"] == {} and far["abstain"] is True
    refused = await _merged(services, meals, off_topic, answer_threshold=below + 0.005)
    assert refused["flags"] == {"low_confidence": True} and refused["abstain"] is True


async def test_a_later_turn_that_is_no_follow_up_is_recorded_as_such(
    services: Services, meals: str
) -> None:
    question = "What is the meal allowance for a sabbatical?"  # "sabbatical": in no source
    first = (await _merged(services, meals, question))["abstention_signals"]
    later = await _merged(services, meals, question, ("What is the meal allowance?",))
    follow_up = await _merged(
        services, meals, question, ("What is the meal allowance?",), "follow_up"
    )
    assert first["rarest"] == later["abstention_signals"]["rarest"] > 0
    assert (first["later"], first["follow_up"]) == (0.0, 0.0)
    assert later["abstention_signals"]["later"] == 1.0
    assert (
        follow_up["abstention_signals"]["later"],
        follow_up["abstention_signals"]["follow_up"],
    ) == (0.0, 1.0)


SED = "--sandbox: In sandbox mode, e/w/r commands are rejected and such programs abort."


async def _looked(
    services: Services, workspace: str, question: str, keyword: str, **knobs: object
) -> dict:
    """The merge of ``question`` with one source place: the travel policy first, the
    keyword hit ``keyword`` out of the hits, found by its keywords alone (as
    ``retrieve_vectors`` leaves a keyword top hit that the fusion ranked far down)."""
    found = await services.searcher.search(workspace, question, top_k=10)
    hits = [h.as_source() for h in found if h.chunk_id != keyword]
    (hit,) = [{**h.as_source(), "dense_score": None} for h in found if h.chunk_id == keyword]
    state = cast(
        State,
        {
            "workspace_id": workspace,
            "question": question,
            "vector_hits": hits,
            "keyword_hit": hit,
            "document_hits": [],
            "classification": "standalone",
            "history": [],
        },
    )
    ctx = Context(
        workspace_id=workspace, services=services, web_search="off", top_k=1, policy=knobs
    )
    return dict(await merged_sources(state, ctx))


async def test_the_keyword_top_hit_is_weighed_alone_before_not_found(
    services: Services, meals: str, tmp_path: Path
) -> None:
    """The passage that alone names the option asked about answers, in the last source
    place, where the sources above it found nothing; switched off, "not found"."""
    doc = tmp_path / "sed.md"
    doc.write_text(SED)
    await ingest_documents(services, meals, load_path(doc, max_bytes=10**6))
    chunks = await services.searcher.search(meals, "sandbox e/w/r", top_k=1, mode="bm25")
    option = chunks[0].chunk_id
    question = "What does --sandbox mode reject?"
    off = await _looked(services, meals, question, option, keyword_second_look=False)
    assert off["abstain"] is True and [s["id"] for s in off["sources"]] != [option]
    looked = await _looked(services, meals, question, option)
    assert looked["abstain"] is False and looked["sources"][-1]["id"] == option
    threshold = services.policy.answer_threshold
    assert looked["abstention_signals"]["probability"] >= threshold


async def test_a_keyword_hit_that_does_not_answer_leaves_not_found_as_it_was(
    services: Services, meals: str, tmp_path: Path
) -> None:
    doc = tmp_path / "sed.md"
    doc.write_text(SED)
    await ingest_documents(services, meals, load_path(doc, max_bytes=10**6))
    chunks = await services.searcher.search(meals, "sandbox e/w/r", top_k=1, mode="bm25")
    question = "What is the capital of France?"
    off = await _looked(services, meals, question, chunks[0].chunk_id, keyword_second_look=False)
    looked = await _looked(services, meals, question, chunks[0].chunk_id)
    assert off["abstain"] is looked["abstain"] is True
    assert looked["sources"] == off["sources"]


async def test_a_chunk_of_several_paragraphs_is_also_weighed_by_the_one_that_answers(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    """The paragraph signal is the cosine of the paragraph holding the closest sentence,
    above the whole chunk's, whose other paragraphs say something else."""
    doc = tmp_path / "history.md"
    doc.write_text(
        "Corvane was founded in 1987 in Eindhoven by two engineers from Philips. "
        "Its first product measured coatings on silicon wafers.\n\n"
        "Daniel Okafor left Corvane in 1995 to become a professor of optics.\n\n"
        "In 2009 revenue fell by 38 percent and sixty jobs were cut."
    )
    await ingest_documents(services, workspace, load_path(doc, max_bytes=10**6))
    signals = (await _merged(services, workspace, "When did Daniel Okafor leave?"))[
        "abstention_signals"
    ]
    assert signals["paragraph"] > signals["confidence"]
