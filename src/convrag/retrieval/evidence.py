"""Whether the sources say what was asked: the signals behind "not found".

Each function weighs by the policy it is given (the packaged one when none is).

- ``confidence``: the best dense cosine of the retrieved chunks to the query;
- ``sentence``: the cosine of their closest sentences to the query (a chunk mixing
  several sections scores low while one sentence answers);
- ``paragraph``: the cosine of the paragraph holding the closest sentence;
- ``rarest``: the IDF of the rarest word the user typed that no retrieved text holds;
- ``every_term``: whether one sentence holds every word asked;
- ``follow_up``: whether the turn is a follow-up (its query is a rewrite);
- ``bm25``: whether the keyword list found anything at all;
- ``later``: a later turn of a conversation that is not a follow-up;
- ``margin``: how far the best chunk's cosine stands above the mean of the next four;
- ``agreement``: whether the best source was found by both the dense and keyword lists;
- ``coverage``: the share of the query's terms that the sources' text holds;
- ``null_mean``, ``null_spread``: what unrelated questions score on the workspace
  (:mod:`convrag.retrieval.calibration`), the scale the cosines are read on;

They are recorded with each turn, so that the decision can be fitted on them
(``benchmarks/fit_not_found.py``): the decision is one logistic model over
:func:`answer_features`, its weights and threshold in the retrieval policy. A decision
whose probability lies within a margin of the threshold is a close call
(:func:`assurance`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from convrag.records import Assurance, Source
from convrag.retrieval.policy import RetrievalPolicy, default_policy
from convrag.retrieval.ranking import Similarity, joined, query_coverage, ranked_by_words
from convrag.text.tokens import expand_acronyms


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
    later: float
    margin: float
    agreement: float
    coverage: float
    null_mean: float
    null_spread: float

    def as_dict(self) -> dict[str, float]:
        return {k: round(float(v), 6) for k, v in asdict(self).items()}


def assurance(evidence: float, floor: float, margin: float) -> Assurance:
    """``low`` when ``evidence`` lies within ``margin`` of ``floor`` (either side): the
    turn could have gone the other way."""
    return "low" if abs(evidence - floor) < margin else "high"


def candidate_cosines(
    query: str,
    sources: Sequence[Source],
    similarity: Similarity,
    policy: RetrievalPolicy | None = None,
) -> list[float]:
    """The cosine to ``query`` of the policy's ``evidence_candidates`` best sentences by
    words (those an extractive answer weighs first), in that order; empty when no sentence
    shares a word with the query."""
    policy = policy or default_policy()
    scored = ranked_by_words(query, sources, question_to_answer=policy.question_to_answer)
    scored = scored[: policy.evidence_candidates]
    if not scored:
        return []
    return [float(c) for c in similarity(query, [s for *_, s in scored])]


def names_every_term(
    query: str, sources: Sequence[Source], policy: RetrievalPolicy | None = None
) -> bool:
    """Whether one of the policy's ``evidence_candidates`` best sentences by words holds every
    content term of ``query``, its source's title counting as part of it ("Unused days
    carry over until 31 March." of the leave policy says what "Can I carry over unused
    leave?" asks).

    On a record-style chunk ("Maria Lopez; Position: Product Manager; ...") the chunk's
    cosine, and even the sentence's, can be low while the sentence plainly says what was
    asked: the "not found" model weighs this beside the cosines.
    """
    policy = policy or default_policy()
    return any(
        query_coverage(query, f"{sources[n - 1]['title'] or ''}\n{sent}") == 1.0
        for _, n, _, sent in ranked_by_words(
            query, sources, question_to_answer=policy.question_to_answer
        )[: policy.evidence_candidates]
    )


def sentence_evidence(
    query: str,
    sources: Sequence[Source],
    similarity: Similarity,
    policy: RetrievalPolicy | None = None,
    *,
    top: int = 2,
) -> float | None:
    """The mean of the ``top`` highest :func:`candidate_cosines`, or the highest less the
    policy's ``lone_sentence_margin`` when that is more; None when no sentence shares a
    word with the query.

    This is the "not found" evidence: a passage can be close to a question's topic while
    none of its sentences says what was asked, which is how MTRAG's off-topic probes and
    unanswerable turns look to a chunk's cosine. Two sentences rather than one, so that a
    single sentence close by chance is not enough, unless it is closer by the margin.
    An acronym the sources spell out is weighed with its spelling (:func:`expand_acronyms`).
    """
    query = expand_acronyms(query, joined(sources))
    policy = policy or default_policy()
    return closest_evidence(
        candidate_cosines(query, sources, similarity, policy), policy.lone_sentence_margin, top=top
    )


_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")


def paragraph_evidence(
    query: str,
    sources: Sequence[Source],
    similarity: Similarity,
    policy: RetrievalPolicy | None = None,
) -> float | None:
    """The cosine to ``query`` of the paragraph that holds the closest of the policy's
    ``evidence_candidates`` best sentences by words, when its chunk holds more than one paragraph;
    None otherwise (the chunk's own cosine says the same).

    MTRAG's passages are each about a paragraph. A chunk of a real document packs several
    (800 characters, under its title and headings), and its cosine is diluted by the ones
    that say something else: "When did Daniel Okafor leave?" is 0.26 from its chunk and
    0.58 from the paragraph that answers it. Recorded as a signal; the shipped model does
    not weigh it (it loses on held-out data, BENCHMARKS.md).
    """
    query = expand_acronyms(query, joined(sources))
    policy = policy or default_policy()
    scored = ranked_by_words(query, sources, question_to_answer=policy.question_to_answer)
    scored = scored[: policy.evidence_candidates]
    if not scored:
        return None
    cosines = similarity(query, [s for *_, s in scored])
    _, n, _, sentence = scored[max(range(len(scored)), key=lambda i: cosines[i])]
    paragraphs = [p for p in _PARAGRAPH_BREAK.split(sources[n - 1]["text"]) if p.strip()]
    holding = [p.strip() for p in paragraphs if sentence.strip() in p]
    if len(paragraphs) < 2 or not holding:
        return None
    return float(similarity(query, holding[:1])[0])


def closest_evidence(cosines: Sequence[float], lone_margin: float, *, top: int = 2) -> float | None:
    """The mean of the ``top`` highest ``cosines``, or the highest less ``lone_margin``
    when that is more; None when there are none."""
    closest = sorted(cosines, reverse=True)[:top]
    if not closest:
        return None
    return max(sum(closest) / len(closest), closest[0] - lone_margin)


def answer_features(signals: Signals) -> dict[str, float]:
    """The signals as the "not found" model weighs them: each recorded number, and the
    best chunk's and sentence's cosines above the workspace's null mean (the same
    cosine means less on a workspace where unrelated questions find close passages)."""
    return {
        "confidence": signals.confidence,
        "sentence": signals.sentence,
        "paragraph": signals.paragraph,
        "confidence_above_null": signals.confidence - signals.null_mean,
        "sentence_above_null": signals.sentence - signals.null_mean,
        "margin": signals.margin,
        "rarest": signals.rarest,
        "rarest_later": signals.rarest * signals.later,
        "every_term": signals.every_term,
        "coverage": signals.coverage,
        "agreement": signals.agreement,
        "bm25": signals.bm25,
        "follow_up": signals.follow_up,
        "later": signals.later,
    }


def logistic(features: Mapping[str, float], model: Mapping[str, float]) -> float:
    """A logistic model's probability: ``model`` gives each named feature its weight and
    ``bias`` the rest."""
    z = model.get("bias", 0.0) + sum(
        w * features[name] for name, w in model.items() if name != "bias"
    )
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def answer_probability(signals: Signals, model: Mapping[str, float]) -> float:
    """The probability that the sources hold the answer: the ``answer_model`` over
    :func:`answer_features`."""
    return logistic(answer_features(signals), model)
