"""The signals behind a "not found": what the merge computes about a turn's evidence,
recorded with the turn so that one decision can be fitted on them (issue 34) instead of a
chain of special cases.

- ``confidence``: the best dense cosine of the retrieved chunks to the query;
- ``sentence``: the best cosine of one of their sentences to the query (a chunk mixing
  several sections scores low while one sentence answers);
- ``rarest``: the IDF of the rarest word the user typed that no retrieved text holds;
- ``every_term``: whether one sentence holds every word asked;
- ``follow_up``: whether the turn is a follow-up (its query is a rewrite);
- ``bm25``: whether the keyword list found anything at all;
- ``evidence``: what the relevance floor was held against (the decision itself).

A decision whose evidence is within a margin of the floor is a close call
(:func:`assurance`): the answer says it is low confidence rather than only answering or
refusing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

Assurance = Literal["high", "low"]
"""How sure an answer (or its "not found") is: ``low`` when the decision was close."""


@dataclass(frozen=True, slots=True)
class Signals:
    """One turn's evidence, as numbers (booleans as 0 or 1)."""

    confidence: float
    sentence: float
    paragraph: float
    rarest: float
    every_term: float
    follow_up: float
    bm25: float
    evidence: float

    def as_dict(self) -> dict[str, float]:
        return {k: round(float(v), 6) for k, v in asdict(self).items()}


def assurance(evidence: float, floor: float, margin: float) -> Assurance:
    """``low`` when ``evidence`` lies within ``margin`` of ``floor`` (either side): the
    turn could have gone the other way."""
    return "low" if abs(evidence - floor) < margin else "high"


def assurance_of(flags: dict[str, object]) -> Assurance:
    """A turn's assurance from its flags (``low_confidence``)."""
    return "low" if flags.get("low_confidence") else "high"
