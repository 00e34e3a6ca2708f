"""The document reading score on tiny synthetic corpus files made in a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from convrag.evaluation.documents import (
    ChunkView,
    Expectation,
    ReadDoc,
    convrag_reader,
    evaluate_documents,
    heading_matches,
    load_corpus,
    markdown_dir_reader,
    normalise,
    score_document,
    scores_table,
    term_attached,
    title_matches,
)

S1 = "The pump moves water from the lower tank to the upper tank."
S2 = "It runs only while the float switch is closed."
S3 = "Clean the filter every month, or weekly in dusty rooms."


def _expectation(**over: Any) -> Expectation:
    base: dict[str, Any] = {
        "path": Path("x.md"),
        "kind": "manual",
        "title": "Pump Manual",
        "sentences": [(S1, "Operation"), (S2, "Operation"), (S3, "Maintenance")],
        "terms": [],
        "absent": [],
    }
    return Expectation(**{**base, **over})


def _write(corpus: Path, stem: str, ext: str, body: str, expect: dict[str, Any]) -> None:
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / f"{stem}.{ext}").write_text(body, encoding="utf-8")
    (corpus / f"{stem}.expect.json").write_text(json.dumps(expect), encoding="utf-8")


def test_a_sentence_split_across_two_chunks_is_missing() -> None:
    half = len(S1) // 2
    doc = ReadDoc(
        "Pump Manual",
        [
            ChunkView(S1[:half], ("Operation",)),
            ChunkView(S1[half:] + " " + S2, ("Operation",)),
            ChunkView(S3, ("Maintenance",)),
        ],
    )
    score = score_document(_expectation(), doc)
    assert score.tally.found == 2
    assert score.tally.scores()["sentence_integrity"] == pytest.approx(2 / 3, abs=1e-3)
    assert [m["text"] for m in score.missing] == [S1]
    assert score.missing[0]["why"] == "split across chunks"


def test_whitespace_quotes_and_markdown_syntax_do_not_count() -> None:
    chunk = "The **pump** moves [water](http://x.org/w) from\nthe lower  tank to the upper tank."
    exp = _expectation(sentences=[(S1, None), ("It's “fine” — really.", None)])
    doc = ReadDoc(None, [ChunkView(chunk), ChunkView('It’s "fine" - really.')])
    assert score_document(exp, doc).tally.found == 2
    assert normalise("snake_case _stays_ `code`") == "snake_case stays code"
    assert normalise("The [open source][1] [tool] runs `` :role:`x` ``.") == (
        "The open source tool runs :role:x."
    )


def test_headings_are_checked_on_the_last_element_without_section_numbers() -> None:
    assert heading_matches("Operation", ("Pump", "Operation"))
    assert heading_matches("2.12 Operation", ("operation",))
    assert heading_matches("Operation", ("3. OPERATION",))
    assert not heading_matches("Operation", ("Operation", "Details"))
    assert not heading_matches("Operation", ())
    doc = ReadDoc(
        "Pump Manual",
        [ChunkView(S1 + " " + S2, ("Manual", "1 Operation")), ChunkView(S3, ("Operation",))],
    )
    score = score_document(_expectation(), doc)
    assert (score.tally.heading_checked, score.tally.heading_ok) == (3, 2)
    assert score.wrong_heading[0]["expected"] == "Maintenance"


def test_furniture_is_listed_lines_and_dot_leaders() -> None:
    exp = _expectation(absent=["Page 3 of 12", "Contents"])
    doc = ReadDoc(
        None,
        [
            ChunkView("Introduction ........ 3\nOperation . . . . 7"),
            ChunkView(S1 + "\nPage 3 of 12"),
            ChunkView(S2 + " The contents of the tank stay clean."),  # a word, not the line
            ChunkView(S3 + " It costs 4.50 euros."),
        ],
    )
    score = score_document(exp, doc)
    assert score.tally.furniture == 2
    assert score.tally.scores()["furniture_rate"] == 0.5
    assert score.furniture[0]["reason"].startswith("dot leaders")


def test_titles_and_terms() -> None:
    assert title_matches("Pump  Manual", "pump manual")
    assert not title_matches("Pump Manual", None)
    assert not title_matches("Pump Manual", "pump")
    assert term_attached("Float switch", "A switch that", "**Float switch**: A switch that...")
    assert not term_attached("Float switch", "A switch that", "A switch that. Float switch")
    far = "Float switch " + "x" * 250 + " A switch that"
    assert not term_attached("Float switch", "A switch that", far)


def test_the_corpus_scores_convrag_and_a_library_folder(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    expect = {
        "kind": "manual",
        "title": "Pump Manual",
        "sentences": [{"text": S1, "heading": "Operation"}, {"text": S3, "heading": "Care"}],
        "absent": ["Printed in Nowhere"],
        "questions": [],
    }
    md = f"# Pump Manual\n\n## Operation\n\n{S1}\n\n## Care\n\n{S3}\n\nPrinted in Nowhere\n"
    _write(corpus, "pump", "md", md, expect)
    (corpus / "orphan.expect.json").write_text("{}")  # its document is not there yet
    _write(corpus, "tank", "md", f"# Tank\n\n{S2}\n", {"kind": "web", "title": "Tank"})
    assert [e.path.name for e in load_corpus(corpus)] == ["pump.md", "tank.md"]

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "pump.md").write_text(md.replace(S3, S3[:20]))
    (lib / "tank.error").write_text("ValueError: cannot parse")
    readers = {
        "convrag": convrag_reader(800, 100, max_bytes=10**6, max_decompressed=10**7, max_records=9),
        "lib": markdown_dir_reader(lib, 800, 100),
    }
    report = evaluate_documents(corpus, readers, settings={"chunk_size": 800})
    ours, theirs = report["readers"]["convrag"], report["readers"]["lib"]
    assert ours["overall"]["sentence_integrity"] == 1.0
    assert ours["overall"]["title_accuracy"] == 1.0
    assert ours["overall"]["counts"]["furniture"] == 1  # the chunk with pump's last line
    assert set(ours["by_kind"]) == {"manual", "web"}
    assert theirs["overall"]["sentence_integrity"] == 0.5
    assert theirs["documents"]["tank.md"]["error"] == "ValueError: cannot parse"
    assert theirs["documents"]["pump.md"]["title"]["got"] == "Pump Manual"
    assert theirs["overall"]["heading_accuracy"] == 1.0  # S1 under "## Operation"
    assert "| lib |" in scores_table(report)


def test_the_command_writes_the_report(tmp_path: Path) -> None:
    from convrag.cli import app

    corpus = tmp_path / "corpus"
    _write(corpus, "a", "md", f"# A\n\n{S1}\n", {"title": "A", "sentences": [{"text": S1}]})
    out = tmp_path / "r.json"
    args = ["eval", "documents", "--corpus", str(corpus), "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "| convrag | 1.000 |" in result.output
    assert json.loads(out.read_text())["settings"] == {"chunk_size": 800, "chunk_overlap": 100}
    missing = CliRunner().invoke(app, [*args, "--reader", "nosuchlib"])
    assert missing.exit_code == 2


def test_a_format_the_library_does_not_read_is_left_out(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    _write(corpus, "a", "md", f"# A\n\n{S1}\n", {"title": "A", "sentences": [{"text": S1}]})
    _write(corpus, "b", "md", f"# B\n\n{S2}\n", {"title": "B", "sentences": [{"text": S2}]})
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "a.md").write_text(f"Title A\n=======\n\n{S1}\n")
    (lib / "b.skip").write_text("format .md not read")
    report = evaluate_documents(corpus, {"lib": markdown_dir_reader(lib, 800, 100)}, settings={})
    lib_report = report["readers"]["lib"]
    assert lib_report["skipped"] == ["b.md"]
    assert lib_report["overall"]["counts"]["documents"] == 1
    assert lib_report["documents"]["a.md"]["title"]["got"] == "Title A"
