"""The reading bars on the repository's sets of real documents: tests/documents/corpus
(Sphinx, Texinfo, MkDocs and Javadoc HTML, READMEs, PDF manuals, a .docx) and
tests/documents/heldout (other projects and generators: Furo, split-node Texinfo, rustdoc,
MkDocs Material, a man page, LibreOffice PDF and .docx), scored once before the readers
were fixed on it (BENCHMARKS.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convrag.evaluation.documents import convrag_reader, evaluate_documents

SETS = {"corpus": 10, "heldout": 9}
DOCUMENTS = Path(__file__).resolve().parents[2] / "documents"


@pytest.mark.parametrize("folder", sorted(SETS))
def test_every_document_of_a_set_reads_whole_without_furniture_under_its_headings(
    folder: str,
) -> None:
    reader = convrag_reader(
        800, 100, max_bytes=50 * 2**20, max_decompressed=200 * 2**20, max_records=10
    )
    report = evaluate_documents(DOCUMENTS / folder, {"convrag": reader}, settings={})
    overall = report["readers"]["convrag"]["overall"]
    documents = report["readers"]["convrag"]["documents"]
    failures = {
        name: (doc["missing_sentences"][:3], doc["wrong_heading"][:3], doc["furniture_chunks"][:3])
        for name, doc in documents.items()
        if doc["missing_sentences"] or doc["wrong_heading"] or doc["furniture_chunks"]
    }
    assert overall["counts"]["documents"] >= SETS[folder] and overall["counts"]["errors"] == 0
    assert overall["sentence_integrity"] >= 0.98, failures
    assert overall["heading_accuracy"] >= 0.95, failures
    assert overall["furniture_rate"] <= 0.01, failures
    assert overall["title_accuracy"] == 1.0, {n: d["title"] for n, d in documents.items()}
