"""Reading an MTRAG domain's corpus: the gzip file, or a link to one stored as text."""

import gzip
import json
from pathlib import Path

import pytest

from convrag.evaluation.mtrag import load_corpus


def _corpus(folder: Path) -> None:
    folder.mkdir(parents=True)
    row = {"_id": "p1", "title": "Pools", "text": "A pool caps concurrent jobs."}
    with gzip.open(folder / "corpus.jsonl.gz", "wt") as fh:
        fh.write(json.dumps(row) + "\n")


def test_a_corpus_link_stored_as_text_is_followed(tmp_path: Path) -> None:
    _corpus(tmp_path / "mtrag" / "clapnq")
    other = tmp_path / "mtrag-un" / "clapnq"
    other.mkdir(parents=True)
    (other / "corpus.jsonl.gz").write_text("../../mtrag/clapnq/corpus.jsonl.gz")
    (doc,) = load_corpus(other)
    assert (doc.source, doc.title) == ("p1", "Pools")


def test_a_corpus_link_to_nothing_names_where_it_points(tmp_path: Path) -> None:
    tmp_path.joinpath("corpus.jsonl.gz").write_text("../missing/corpus.jsonl.gz")
    with pytest.raises(FileNotFoundError, match="missing"):
        load_corpus(tmp_path)
