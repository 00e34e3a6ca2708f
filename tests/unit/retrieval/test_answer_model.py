"""The "not found" model: one logistic model over named features of the signals."""

from __future__ import annotations

import math
from dataclasses import fields

import pytest

from convrag.retrieval.calibration import MIN_SPREAD, scale_of
from convrag.retrieval.evidence import Signals, answer_features, answer_probability


def _signals(**changes: float) -> Signals:
    names = [f.name for f in fields(Signals) if f.name != "null_spread"]
    values = dict.fromkeys(names, 0.0)
    return Signals(**{**values, "null_spread": 0.1, **changes})


def test_the_probability_is_the_logistic_of_the_weighed_features() -> None:
    signals = _signals(confidence=0.6, rarest=2.0)
    model = {"bias": -1.0, "confidence": 5.0, "rarest": -0.5}
    assert answer_probability(signals, model) == pytest.approx(1 / (1 + math.exp(-1.0)))
    assert answer_probability(signals, {"bias": 0.0}) == 0.5


def test_a_cosine_is_also_weighed_above_the_workspace_null() -> None:
    features = answer_features(_signals(confidence=0.6, sentence=0.5, null_mean=0.45))
    assert features["confidence_above_null"] == pytest.approx(0.15)
    assert features["sentence_above_null"] == pytest.approx(0.05)
    assert features["confidence"] == 0.6


def test_a_model_naming_a_feature_that_does_not_exist_fails_loudly() -> None:
    with pytest.raises(KeyError):
        answer_probability(_signals(), {"bias": 0.0, "no_such_signal": 1.0})


def test_the_null_is_the_mean_and_spread_of_the_generic_questions_cosines() -> None:
    scale = scale_of([0.2, 0.4])
    assert (scale.mean, scale.spread) == (0.3, 0.1)
    assert scale_of([0.5]).spread == MIN_SPREAD  # one cosine: no spread to divide by
    assert scale_of([]).mean == 0.0
