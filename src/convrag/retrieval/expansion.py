"""History terms that join a follow-up's query: chosen by a fitted term-selection model.

A follow-up names less than it means ("Is there a limit on the file size?" after a
question about Cloudant's documents). Which words of the conversation it leaves out is
learned, not written as rules (after QuReTeC, Voskarides et al. 2020): every content word
of the earlier questions and answers that the message lacks is a candidate, weighed by a
logistic model (``expansion_model`` in the retrieval policy, written by
``benchmarks/fit_expansion.py`` from the rewrites of MTRAG's follow-ups) over where the
word stands in the history (:data:`EXPANSION_FEATURES`). The candidates the model rates
highest, at most ``expansion_terms`` of them, follow the message in the follow-up's
history query (:func:`~convrag.retrieval.planning.plan_queries`); an empty model searches
the message with the previous question instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from convrag.records import HistoryTurn
from convrag.retrieval.evidence import logistic
from convrag.text.tokens import content_terms, content_words, tokenize

EXPANSION_FEATURES = (
    "in_previous_question",
    "in_previous_answer",
    "in_first_question",
    "recency",
    "question_mentions",
    "answer_mentions",
    "capitalised",
    "numeric",
    "length",
)
"""The signals of a candidate term (:func:`term_features`): whether the previous question,
the previous answer and the first question hold it; how recently it was said (1 in the
previous turn, 1/2 the one before); in how many questions and answers (log); whether it
is written capitalised inside a sentence (a name); whether it holds a digit; its length
(characters / 10)."""

_NAME = re.compile(r"(?<=[a-z,;] )([A-Z][a-z]+)")
"""A capitalised word after a lower-case word: a name, not a sentence's first word."""


def _in_order(text: str) -> dict[str, None]:
    """``text``'s :func:`content_terms` in the order it says them (a dict as an ordered
    set): the candidates, and so the model's ties, follow the history, not a set's hash
    order, which differs between processes."""
    return dict.fromkeys(t.low for t in content_words(tokenize(text)))


def term_features(message: str, history: Sequence[HistoryTurn]) -> dict[str, dict[str, float]]:
    """Each candidate term (a content word of the history that ``message`` lacks, two
    characters or more) with its :data:`EXPANSION_FEATURES`; none on a first turn."""
    if not history:
        return {}
    asked = content_terms(message)
    said = [(_in_order(h["question"]), _in_order(h["answer"])) for h in history]
    names = {
        m.lower() for h in history for t in (h["question"], h["answer"]) for m in _NAME.findall(t)
    }
    last: dict[str, int] = {}
    mentions: dict[str, list[int]] = {}
    for i, texts in enumerate(said):
        for k, words in enumerate(texts):
            for word in words:
                if word not in asked and len(word) >= 2:
                    last[word] = i
                    mentions.setdefault(word, [0, 0])[k] += 1
    (previous_q, previous_a), first_q = said[-1], said[0][0]
    return {
        word: {
            "in_previous_question": float(word in previous_q),
            "in_previous_answer": float(word in previous_a),
            "in_first_question": float(word in first_q),
            "recency": 1.0 / (len(history) - i),
            "question_mentions": math.log1p(mentions[word][0]),
            "answer_mentions": math.log1p(mentions[word][1]),
            "capitalised": float(word in names),
            "numeric": float(any(c.isdigit() for c in word)),
            "length": len(word) / 10,
        }
        for word, i in last.items()
    }


def expansion_terms(
    message: str, history: Sequence[HistoryTurn], model: Mapping[str, float], most: int
) -> list[str]:
    """The ``most`` candidate terms ``model`` rates highest, best first (ties in the order
    the history says them)."""
    rated = [(logistic(f, model), w) for w, f in term_features(message, history).items()]
    ranked = sorted(range(len(rated)), key=lambda i: -rated[i][0])
    return [rated[i][1] for i in ranked[:most]]
