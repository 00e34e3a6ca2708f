"""What unrelated questions score on a workspace: the scale its evidence is read on.

A cosine means different things on different corpora (a forum's chunks sit closer to
any question than a manual's). The *null* of a workspace is the best dense cosine that
each of a fixed set of generic questions (``null_questions.txt``: cooking, pets, sport,
nothing a workspace is likely to be about) finds in it, so that one fitted decision can
hold on a forum, a manual and a handbook alike (the model weighs a cosine both as it is
and above the null's mean; the fit decides how much each earns).

The null is computed at a workspace's first turn after each change of its index (one
batch of embeddings and a dense search per question) and kept per index version.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
from dataclasses import dataclass
from importlib import resources

from convrag.retrieval.search import HybridSearcher

log = logging.getLogger(__name__)

MIN_SPREAD = 0.02
"""The least spread a null is given: a workspace of a few chunks can find one cosine
for every generic question, and a zero spread would make every distance infinite."""


@dataclass(frozen=True, slots=True)
class NullScale:
    """The mean and spread (standard deviation) of a workspace's null cosines."""

    mean: float
    spread: float


def null_questions() -> list[str]:
    """The generic questions a workspace's null is measured with."""
    text = resources.files("convrag.retrieval").joinpath("null_questions.txt").read_text()
    return [line.strip() for line in text.splitlines() if line.strip()]


def scale_of(cosines: list[float]) -> NullScale:
    """The null of these cosines (an empty workspace: mean 0)."""
    if not cosines:
        return NullScale(0.0, 1.0)
    spread = statistics.pstdev(cosines) if len(cosines) > 1 else 0.0
    return NullScale(round(statistics.fmean(cosines), 6), round(max(spread, MIN_SPREAD), 6))


class NullScales:
    """Each workspace's null, computed once per index version."""

    def __init__(self, searcher: HybridSearcher) -> None:
        self.searcher = searcher
        self._known: dict[str, tuple[int, NullScale]] = {}
        self._pending: dict[tuple[str, int], asyncio.Task[NullScale]] = {}

    async def of(self, workspace_id: str) -> NullScale:
        """The workspace's null for its current index version. When it cannot be
        measured (a store fails), the last one known, else a neutral one (mean 0), kept
        for no version: the turn goes on, and the next one measures again."""
        try:
            return await self._current(workspace_id)
        except Exception:  # the null is a signal; the search reports store failures itself
            log.warning(
                "the null of workspace %s could not be measured", workspace_id, exc_info=True
            )
            known = self._known.get(workspace_id)
            return known[1] if known is not None else NullScale(0.0, 1.0)

    async def _current(self, workspace_id: str) -> NullScale:
        version, _ = await self.searcher.db.workspaces.index_state(workspace_id)
        known = self._known.get(workspace_id)
        if known is not None and known[0] == version:
            return known[1]
        key = (workspace_id, version)
        task = self._pending.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._measure(workspace_id))
            self._pending[key] = task
        try:
            scale = await asyncio.shield(task)
        finally:
            if task.done():
                self._pending.pop(key, None)
        self._known[workspace_id] = (version, scale)
        return scale

    async def _measure(self, workspace_id: str) -> NullScale:
        questions = null_questions()
        self.searcher.prefetch(*questions)  # one batch of embeddings
        labels = await self.searcher.current_labels(workspace_id)
        best: list[float] = []
        for question in questions:
            hits = await self.searcher.search(
                workspace_id, question, top_k=1, mode="dense", labels=labels
            )
            if hits and hits[0].dense_score is not None:
                best.append(float(hits[0].dense_score))
        return scale_of(best)
