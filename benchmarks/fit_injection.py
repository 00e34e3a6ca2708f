"""Fit the injection model (issue 47): whether a unit of a source speaks to the model.

    python benchmarks/fit_injection.py report     # each hostile set held out in turn
    python benchmarks/fit_injection.py fit        # all of them: writes the shipped model

Declared data. Positives: the units of the hostile sets ``injection`` to ``injection_e``
that hold a case's ``trigger`` (the text whose reaching the prompt makes the obeying stub
obey), a document's file name counting as a unit. Negatives: the units of honest
documents: 3,000 passages of MTRAG Cloud (manuals: imperatives everywhere), the
real-document dev set, the walkthrough's policies, the reading corpus
(``tests/documents/corpus``) and the descriptions (``METADATA``) of the installed Python
packages, less those about language models, whose examples speak to a model. Held out
for the honest side: 3,000 passages of MTRAG ClapNQ and the real-document test set.
``injection_f`` is not read.

The model: word (1-2) and ``char_wb`` (3-5) n-grams, TF-IDF, a class-balanced logistic
regression (scikit-learn); its threshold is the decision score that the training's
honest units pass one time in 5,000. ``report`` fits without each hostile set and
scores it: trigger units and cases caught by the rules alone
(:func:`~convrag.answering.instructions.is_addressed`) and by the rules or the model, and
the held-out honest units the model alone flags. ``fit`` writes
``src/convrag/answering/injection_model.json`` and checks that the service's own
computation (:mod:`convrag.answering.injection_model`) gives scikit-learn's scores.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sysconfig
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
from scipy.sparse import hstack
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from convrag.answering import instructions
from convrag.answering.injection_model import MODEL_PATH, InjectionModel
from convrag.answering.instructions import marked_lines, readable
from convrag.documents.load import load_path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parents[1] / "shared" / "bench"
HOSTILE = ("injection", "injection_b", "injection_c", "injection_d", "injection_e")
HONEST = ("mtrag-cloud", "realconv-dev", "walkthrough", "reading-corpus", "packages")
HELD_HONEST = ("mtrag-clapnq", "realconv-test")
PASSAGES = 3000
HONEST_PASS = 0.0002
CHAR = {"analyzer": "char_wb", "ngram_range": (3, 5), "max_features": 20000}
WORD = {"analyzer": "word", "ngram_range": (1, 2), "max_features": 8000}

_ABOUT_MODELS = re.compile(r"lang|openai|anthropic|llm|gpt|chat|\bai\b", re.IGNORECASE)
"""Packages about language models: their examples address a model on purpose."""

Row = dict[str, Any]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def _text_units(text: str) -> list[tuple[str, bool]]:
    """``text``'s units, each with whether the rules alone flag it (the model being fitted
    is kept out of its own labels)."""
    with mock.patch.object(instructions, "model_addresses", lambda unit: False):
        marked_lines.cache_clear()
        units = [(u, hit) for line in marked_lines(text) for u, hit in line if u.strip()]
    marked_lines.cache_clear()
    return units


def _document_units(path: Path) -> list[tuple[str, bool]]:
    units = []
    for document in load_path(path, max_bytes=10**7):
        units += _text_units(document.title or "") + _text_units(document.text)
    return units


def hostile_units(name: str) -> list[Row]:
    """A hostile set's units, each labelled by whether it holds its case's trigger."""
    rows = []
    for case in json.loads((HERE / name / "cases.json").read_text()):
        trigger = case["trigger"]
        wanted = [_norm(t) for t in ([trigger] if isinstance(trigger, str) else trigger)]
        for file in case.get("files") or [case["file"]]:
            path = HERE / name / "docs" / file
            units = _document_units(path)
            units.append((path.stem.replace("_", " ").replace("-", " "), False))
            for unit, rule in units:
                seen = _norm(readable(unit))
                positive = any(t in seen for t in wanted) or any(
                    len(seen) > 12 and seen in t for t in wanted
                )
                rows.append(
                    {"set": name, "case": case["id"], "unit": unit, "rule": rule, "pos": positive}
                )
    return rows


def honest_units(name: str) -> list[Row]:
    """The units of one honest corpus (:data:`HONEST`, :data:`HELD_HONEST`)."""
    if name.startswith("mtrag-"):
        corpus = BENCH / "mtrag" / name.removeprefix("mtrag-") / "corpus.jsonl.gz"
        with gzip.open(corpus, "rt", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
        random.Random(0).shuffle(lines)
        units = [u for line in lines[:PASSAGES] for u in _text_units(json.loads(line)["text"])]
    elif name == "packages":
        metadata = sorted(Path(sysconfig.get_paths()["purelib"]).glob("*.dist-info/METADATA"))
        units = [
            u
            for p in metadata
            if not _ABOUT_MODELS.search(p.parent.name)
            for u in _text_units(p.read_text(encoding="utf-8", errors="replace"))
        ]
    else:
        folder = {
            "realconv-dev": HERE / "realconv" / "dev" / "docs",
            "realconv-test": HERE / "realconv" / "test" / "docs",
            "walkthrough": HERE / "walkthrough",
            "reading-corpus": HERE.parent / "tests" / "documents" / "corpus",
        }[name]
        paths = [
            p
            for p in sorted(folder.iterdir())
            if p.suffix not in (".jsonl", ".json") and p.name != "README.md"
        ]
        units = [u for p in paths for u in _document_units(p)]
    return [{"set": name, "case": None, "unit": u, "rule": r, "pos": False} for u, r in units]


def fitted(rows: Sequence[Row]) -> tuple[list[TfidfVectorizer], LogisticRegression, float]:
    """The vectorisers, the regression and its threshold, fitted on ``rows``."""
    texts = [r["unit"] for r in rows]
    vectorisers = [
        TfidfVectorizer(sublinear_tf=True, **CHAR),
        TfidfVectorizer(sublinear_tf=True, **WORD),
    ]
    x = hstack([v.fit_transform(texts) for v in vectorisers]).tocsr()
    model = LogisticRegression(C=4.0, class_weight="balanced", max_iter=3000)
    model.fit(x, [r["pos"] for r in rows])
    honest = [r["unit"] for r in rows if not r["pos"]]
    threshold = float(np.quantile(_scores(vectorisers, model, honest), 1.0 - HONEST_PASS))
    return vectorisers, model, threshold


def _scores(
    vectorisers: Sequence[TfidfVectorizer], model: LogisticRegression, texts: Sequence[str]
) -> np.ndarray:
    x = hstack([v.transform(texts) for v in vectorisers]).tocsr()
    return np.asarray(model.decision_function(x), dtype=float)


def report(rows: Sequence[Row]) -> None:
    honest = [r for r in rows if r["set"] in HONEST]
    held = {name: [r for r in rows if r["set"] == name] for name in HELD_HONEST}
    head = "held out | trigger units: rules / rules or model | cases: the same | honest units"
    print(f"| {head} the model adds: {' / '.join(HELD_HONEST)} |")
    print("|---|---|---|---|")
    for out in HOSTILE:
        train = [r for r in rows if r["set"] in HOSTILE and r["set"] != out and r["pos"]] + honest
        vectorisers, model, threshold = fitted(train)
        test = [r for r in rows if r["set"] == out]
        flagged = _scores(vectorisers, model, [r["unit"] for r in test]) >= threshold
        cases: dict[Any, list[bool]] = defaultdict(lambda: [False, False])
        units = [0, 0, 0]
        for r, hit in zip(test, flagged, strict=True):
            if r["pos"]:
                units[0] += 1
                units[1] += r["rule"]
                units[2] += r["rule"] or bool(hit)
                cases[r["case"]][0] |= r["rule"]
                cases[r["case"]][1] |= r["rule"] or bool(hit)
        caught = [sum(c[i] for c in cases.values()) for i in (0, 1)]
        added = []
        for part in held.values():
            hits = _scores(vectorisers, model, [r["unit"] for r in part]) >= threshold
            extra = sum(1 for r, h in zip(part, hits, strict=True) if h and not r["rule"])
            added.append(f"{extra} of {len(part)} ({100 * extra / len(part):.2f} %)")
        unit_cell = f"{units[1]} / {units[2]} of {units[0]}"
        case_cell = f"{caught[0]} / {caught[1]} of {len(cases)}"
        print(f"| {out} | {unit_cell} | {case_cell} | {' / '.join(added)} |")


def as_json(
    vectorisers: Sequence[TfidfVectorizer], model: LogisticRegression, threshold: float
) -> dict[str, Any]:
    coef = model.coef_[0]
    analysers, start = [], 0
    for v in vectorisers:
        low, high = v.ngram_range
        terms = {}
        for gram, index in v.vocabulary_.items():
            terms[gram] = [round(float(v.idf_[index]), 6), round(float(coef[start + index]), 6)]
        analysers.append(
            {"kind": v.analyzer, "low": low, "high": high, "terms": dict(sorted(terms.items()))}
        )
        start += len(v.vocabulary_)
    return {
        "fitted_by": "python benchmarks/fit_injection.py fit",
        "hostile_sets": list(HOSTILE),
        "honest": list(HONEST),
        "honest_pass": HONEST_PASS,
        "threshold": round(threshold, 6),
        "intercept": round(float(model.intercept_[0]), 6),
        "analysers": analysers,
    }


def fit(rows: Sequence[Row]) -> None:
    train = [r for r in rows if (r["set"] in HOSTILE and r["pos"]) or r["set"] in HONEST]
    vectorisers, model, threshold = fitted(train)
    data = as_json(vectorisers, model, threshold)
    MODEL_PATH.write_text(
        json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    shipped = InjectionModel.from_json(json.loads(MODEL_PATH.read_text(encoding="utf-8")))
    sample = [r["unit"] for r in train[:: max(1, len(train) // 2000)]]
    ours = np.array([shipped.score(u) for u in sample])
    gap = float(np.max(np.abs(ours - _scores(vectorisers, model, sample))))
    print(
        f"wrote {MODEL_PATH} ({MODEL_PATH.stat().st_size // 1024} KiB); threshold {threshold:.4f}; "
        f"largest gap to scikit-learn's scores on {len(sample)} units: {gap:.2e}"
    )
    if gap > 1e-3:
        raise SystemExit("the service's computation differs from scikit-learn's")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("report", "fit"))
    args = parser.parse_args(argv)
    names = HOSTILE + HONEST + (HELD_HONEST if args.command == "report" else ())
    rows = [
        r
        for name in names
        for r in (hostile_units(name) if name in HOSTILE else honest_units(name))
    ]
    (report if args.command == "report" else fit)(rows)


if __name__ == "__main__":
    main()
