"""Hybrid search and the document-content lookup."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.retrieval.search import HybridSearcher, lookup_document_content
from convrag.services import Services
from convrag.stores.documents import IndexedChunk


async def test_document_lookup_fetches_the_exact_numbered_question(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    lines = [
        f"Question {i}: Solve x^2 + {i}x + {i + 1} = 0\nAnswer: see worked example {i}."
        for i in range(1, 12)
    ]
    sheet = tmp_path / "sheet.txt"
    sheet.write_text("\n\n".join(lines) * 3)
    docs = load_path(sheet, max_bytes=10**6)
    await ingest_documents(services, workspace, docs)
    rows = await lookup_document_content(services.db, workspace, "explain question 6 again")
    assert rows and "Question 6:" in rows[0].text
    assert await lookup_document_content(services.db, workspace + "-b", "explain question 6") == []


async def test_a_search_that_times_out_does_not_cancel_the_index_rebuild(
    services: Services, workspace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    doc = tmp_path / "leave.md"
    doc.write_text("Every employee gets 25 days of paid annual leave per year.")
    await ingest_documents(services, workspace, load_path(doc, max_bytes=10**6))
    real = services.db.documents.chunk_rows

    async def slow_rows(ws: str) -> list[IndexedChunk]:
        await asyncio.sleep(0.5)  # a big workspace: the reload outlasts the search timeout
        return await real(ws)

    monkeypatch.setattr(services.db.documents, "chunk_rows", slow_rows)
    searcher = services.searcher
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await searcher.search(workspace, "annual leave", top_k=1)
    build = searcher._builds[workspace]
    await asyncio.wait_for(asyncio.shield(build), 30)
    assert not build.cancelled()
    version = await services.db.workspaces.index_version(workspace)
    assert searcher.dense is not None and searcher.dense.is_current(workspace, version)
    hits = await searcher.search(workspace, "annual leave", top_k=1)
    assert "25 days" in hits[0].text


async def _counting_searcher(
    services: Services, workspace: str, folder: Path, text: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[HybridSearcher, list[list[str]]]:
    """The searcher over ``workspace`` holding ``text`` as one document, and the list of
    the texts each of its model calls embeds from now on."""
    doc = folder / "leave.md"
    doc.write_text(text)
    await ingest_documents(services, workspace, load_path(doc, max_bytes=10**6))
    searcher = services.searcher
    calls: list[list[str]] = []
    real = searcher.embedder

    class Counting:
        name, dim = real.name, real.dim

        def embed(self, texts: list[str]) -> object:
            calls.append(list(texts))
            return real.embed(texts)

    monkeypatch.setattr(searcher, "embedder", Counting())
    return searcher, calls


async def test_a_prefetched_query_embedding_is_used_by_the_search(
    services: Services, workspace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "Every employee gets 25 days of paid annual leave per year."
    searcher, calls = await _counting_searcher(services, workspace, tmp_path, text, monkeypatch)
    # A question no other test asks: the searcher keeps recent query vectors.
    query = f"how many days of annual leave ({workspace})"
    searcher.prefetch(query)
    hits = await searcher.search(workspace, query, top_k=1, mode="dense")
    assert "25 days" in hits[0].text
    assert calls == [[query]]
    again = await searcher.search(workspace, query, top_k=1, mode="dense")
    assert again[0].text == hits[0].text and calls == [[query]]  # not embedded twice


async def test_queries_prefetched_together_are_embedded_in_one_call_and_each_finds_its_row(
    services: Services, workspace: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (
        "Every employee gets 25 days of paid annual leave per year.\n\n"
        "The office canteen serves lunch from noon until two."
    )
    searcher, calls = await _counting_searcher(services, workspace, tmp_path, text, monkeypatch)
    leave = f"how many days of annual leave do I get ({workspace})"
    lunch = f"when does the canteen serve lunch ({workspace})"
    searcher.prefetch(leave, lunch, leave)
    found = [await searcher.search(workspace, q, top_k=1, mode="dense") for q in (lunch, leave)]
    assert "canteen" in found[0][0].text and "25 days" in found[1][0].text
    assert calls == [[leave, lunch]]


async def _ingest(services: Services, workspace: str, folder: Path, files: dict[str, str]) -> None:
    """Write ``files`` (name: text) under ``folder`` and ingest them, one document each."""
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    for path in sorted(folder.iterdir()):
        await ingest_documents(services, workspace, load_path(path, max_bytes=10**6))


async def test_the_rarest_missing_term_is_the_most_specific_word_no_source_holds(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    await _ingest(
        services,
        workspace,
        tmp_path / "docs",
        {
            "leave.md": "Every employee gets 25 days of paid annual leave per year.",
            "meals.md": "The meal allowance in Europe is 60 euros per day.",
            "travel.md": "Employees book travel through the travel desk.",
        },
    )
    await services.searcher.warm(workspace)
    leave = ["Every employee gets 25 days of paid annual leave per year."]
    searcher = services.searcher
    assert searcher.rarest_missing_term(workspace, "Annual leave days per employee?", leave) == 0
    # "sabbatical" is in no document: the rarest possible; "meal" is in one other document.
    sabbatical = searcher.rarest_missing_term(workspace, "How long is a sabbatical leave?", leave)
    meal = searcher.rarest_missing_term(workspace, "Is there a meal allowance for leave?", leave)
    assert sabbatical > meal > 0
    # Question words and framing verbs are not what a question is about.
    assert searcher.rarest_missing_term(workspace, "How could I tell the leave days?", leave) == 0
    # A typo of a word the sources hold is that word; an unseen word like it is not.
    assert searcher.rarest_missing_term(workspace, "Annual leave per emplyee?", leave) == 0
    assert searcher.rarest_missing_term(workspace, "Annual leave for a sabbatical?", leave) > 0
    # Only the words the user typed count: a rewrite's words from earlier turns are context.
    rewritten = "Per year? (Is there a meal allowance for leave?)"
    assert searcher.rarest_missing_term(workspace, rewritten, leave) == meal
    assert searcher.rarest_missing_term(workspace, rewritten, leave, typed="Per year?") == 0
    # An acronym the sources spell out is there ("PAL" for "paid annual leave").
    assert searcher.rarest_missing_term(workspace, "How many days of PAL?", leave) == 0
    assert searcher.rarest_missing_term(workspace, "How many days of PTO?", leave) > 0
    # So is the noun of a phrasal verb they hold ("backups" for "backed up").
    backed_up = ["Every employee's leave records are backed up per year."]
    assert searcher.rarest_missing_term(workspace, "Leave backups per year?", backed_up) == 0
    assert searcher.rarest_missing_term(workspace, "Leave backups per year?", leave) > 0


async def test_keyword_search_ranks_by_what_a_question_is_about_not_its_framing(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    await _ingest(
        services,
        workspace,
        tmp_path / "faq",
        {
            "howto.md": "How do you do it? How could you tell? Here is how it works.",
            "vpn.md": "Staff connect to the office network with the WireGuard VPN.",
        },
    )
    hits = await services.searcher.search(
        workspace, "How could I tell which VPN we use?", top_k=2, mode="bm25"
    )
    assert "WireGuard" in hits[0].text
    assert len(hits) == 1  # the page of framing words shares no subject word


async def test_the_previous_question_steers_dense_search_but_scores_stay_the_querys_cosine(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    await _ingest(
        services,
        workspace,
        tmp_path / "offices",
        {
            "paris.md": "The Paris office opens at 8 am on weekdays.",
            "berlin.md": "The Berlin office opens at 9 am on weekdays.",
        },
    )
    searcher = services.searcher
    query = "When does the office open?"
    plain = await searcher.search(workspace, query, top_k=2, mode="dense")
    steered = {
        ctx: await searcher.search(
            workspace,
            query,
            top_k=2,
            mode="dense",
            context_query=f"Tell me about the {ctx} office.",
            context_weight=0.6,
        )
        for ctx in ("Paris", "Berlin")
    }
    assert ctx_top(steered["Paris"]) == "Paris" and ctx_top(steered["Berlin"]) == "Berlin"
    cosine = {r.chunk_id: r.score for r in plain}
    for results in steered.values():
        for r in results:
            assert r.score == pytest.approx(cosine[r.chunk_id], abs=1e-5)


async def test_milvus_dense_search_steers_feeds_back_and_scores_as_the_in_process_engine(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    """A Milvus server (``DENSE_ENGINE=milvus``) must rank a conversation's turns as the
    embedded default does: the previous question and feedback move the ranking, and the
    scores stay the query's own cosine."""
    cities = (("Paris", 8), ("Berlin", 9), ("Madrid", 10), ("Rome", 7))
    offices = {f"{c.lower()}.md": f"The {c} office opens at {h} am." for c, h in cities}
    await _ingest(services, workspace, tmp_path / "offices", offices)
    numpy_engine = services.searcher
    milvus_engine = HybridSearcher(
        services.db,
        services.index,
        services.embedder,
        keyword_engine="bm25s",
        policy=services.policy,
    )
    how = {
        "top_k": 4,
        "mode": "dense",
        "context_query": "Tell me about the Berlin office.",
        "context_weight": 0.6,
        "feedback_weight": 0.4,
    }
    query = "When does the office open?"
    expected = await numpy_engine.search(workspace, query, **how)  # type: ignore[arg-type]
    got = await milvus_engine.search(workspace, query, **how)  # type: ignore[arg-type]
    assert "Berlin" in got[0].text
    assert [r.chunk_id for r in got] == [r.chunk_id for r in expected]
    for mine, theirs in zip(got, expected, strict=True):
        assert mine.score == pytest.approx(theirs.score, abs=1e-5)


def ctx_top(results: list[Any]) -> str:
    return "Paris" if "Paris" in results[0].text else "Berlin"


async def test_in_process_hits_carry_their_documents_title_so_no_lookup_is_needed(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    doc = tmp_path / "parking.md"
    doc.write_text("# Parking rules\n\nStaff park on level 2 of the north garage.")
    await ingest_documents(services, workspace, load_path(doc, max_bytes=10**6))
    (hit,) = await services.searcher.search(workspace, "where do staff park", top_k=1)
    stored = await services.db.documents.get_chunks(workspace, [hit.chunk_id])
    assert hit.title is not None and hit.title == stored[0].title
    assert hit.page is None  # not a PDF


async def test_a_hybrid_search_can_bring_the_keyword_lists_first_hit_after_its_top_k(
    services: Services, workspace: str, tmp_path: Path
) -> None:
    """``keyword_first``: the passage BM25 ranks first comes after the ``top_k`` when the
    fusion ranks it lower, and only then; other modes never add it."""
    notes = {f"n{i}.md": f"Mode {i} of the editor changes how lines wrap." for i in range(6)}
    notes["opts.md"] = "--sandbox: e/w/r commands are rejected."
    await _ingest(services, workspace, tmp_path / "modes", notes)
    searcher = services.searcher
    query = "What does the editor's sandbox mode reject?"
    plain = await searcher.search(workspace, query, top_k=2)
    kept = await searcher.search(workspace, query, top_k=2, keyword_first=True)
    bm25 = await searcher.search(workspace, query, top_k=1, mode="bm25")
    assert "sandbox" in bm25[0].text
    top = bm25[0].chunk_id
    assert kept[:2] == plain
    assert [r.chunk_id for r in kept[2:]] == ([] if top in {r.chunk_id for r in plain} else [top])
    dense = await searcher.search(workspace, query, top_k=2, mode="dense", keyword_first=True)
    assert len(dense) == 2
