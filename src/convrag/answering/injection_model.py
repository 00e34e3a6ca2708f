"""A fitted reading of whether a unit of a source speaks to the model.

The rules of :mod:`convrag.answering.instructions` name the ways a text addresses the
model that their authors have seen; documents written by others find new ones (a house
"style setting", a fake ticket system, a request in another language). This model reads
a unit (a sentence, a line, a decoded blob) as word and character n-grams, weighed by a
logistic regression fitted by ``benchmarks/fit_injection.py`` on the instruction units
of the project's hostile sets against the units of honest documents (manuals, an
encyclopedia, the walkthrough's policies). Its numbers, the n-grams' IDF and weights and
the threshold (the score that the fit's honest units pass one time in 5,000), live
in ``injection_model.json``; the computation here is scikit-learn's
``TfidfVectorizer`` (lower-cased, sublinear TF, L2-normalised per analyser:
``char_wb`` and ``word``) and ``LogisticRegression.decision_function``, written out so
that the service does not need scikit-learn.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODEL_PATH = Path(__file__).with_name("injection_model.json")

_WHITE_SPACES = re.compile(r"\s\s+")
_TOKEN = re.compile(r"(?u)\b\w\w+\b")


def char_wb_ngrams(text: str, low: int, high: int) -> list[str]:
    """scikit-learn's ``char_wb`` analyser on lower-cased ``text``."""
    grams: list[str] = []
    for word in _WHITE_SPACES.sub(" ", text.lower()).split():
        padded = f" {word} "
        size = len(padded)
        if size <= low:  # a word no longer than n counts once, whole
            grams.append(padded)
            continue
        top = min(high, size - 1)
        grams += [padded[i : i + n] for n in range(low, top + 1) for i in range(size - n + 1)]
        if top < high:
            grams.append(padded)
    return grams


def word_ngrams(text: str, low: int, high: int) -> list[str]:
    """scikit-learn's ``word`` analyser (its default token pattern) on lower-cased
    ``text``."""
    tokens = _TOKEN.findall(text.lower())
    grams = list(tokens) if low == 1 else []
    for n in range(max(low, 2), min(high, len(tokens)) + 1):
        grams.extend(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return grams


@dataclass(frozen=True)
class Analyser:
    """One vectoriser's vocabulary: each n-gram's IDF and the model's weight for it."""

    kind: str
    low: int
    high: int
    terms: Mapping[str, tuple[float, float]]

    def grams(self, text: str) -> list[str]:
        if self.kind == "char_wb":
            return char_wb_ngrams(text, self.low, self.high)
        return word_ngrams(text, self.low, self.high)

    def score(self, text: str) -> float:
        """The weighted sum of ``text``'s L2-normalised sublinear TF-IDF vector."""
        dot, norm = 0.0, 0.0
        terms = self.terms
        counts = Counter(self.grams(text))
        for gram in counts.keys() & terms.keys():  # the known ones, found in C
            idf, weight = terms[gram]
            count = counts[gram]
            value = idf if count == 1 else (1.0 + math.log(count)) * idf
            dot += value * weight
            norm += value * value
        return dot / math.sqrt(norm) if norm > 0.0 else 0.0


@dataclass(frozen=True)
class InjectionModel:
    """The fitted model: its analysers, intercept and threshold on the decision score."""

    analysers: Sequence[Analyser]
    intercept: float
    threshold: float

    def score(self, unit: str) -> float:
        """The logistic regression's decision score for ``unit`` (its log-odds)."""
        return self.intercept + sum(a.score(unit) for a in self.analysers)

    def addresses(self, unit: str) -> bool:
        return self.score(unit) >= self.threshold

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> InjectionModel:
        """The model as ``benchmarks/fit_injection.py`` writes it."""
        analysers = [
            Analyser(
                spec["kind"],
                int(spec["low"]),
                int(spec["high"]),
                {g: (float(i), float(w)) for g, (i, w) in spec["terms"].items()},
            )
            for spec in data["analysers"]
        ]
        return cls(analysers, float(data["intercept"]), float(data["threshold"]))


@functools.cache
def injection_model() -> InjectionModel | None:
    """The shipped model, or None where no fit has been written."""
    if not MODEL_PATH.exists():
        return None
    return InjectionModel.from_json(json.loads(MODEL_PATH.read_text(encoding="utf-8")))


@functools.lru_cache(maxsize=8192)
def model_addresses(unit: str) -> bool:
    """Whether the fitted model reads ``unit`` as speaking to the model (False without a
    model). Kept for the units read last: a conversation meets the same passages again."""
    model = injection_model()
    return model is not None and model.addresses(unit)
