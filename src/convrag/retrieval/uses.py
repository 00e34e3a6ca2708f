"""What the wing uses of a process's services (:class:`convrag.services.Services` has
them all): the wing depends on these parts, not on the composition root that builds them."""

from __future__ import annotations

from typing import Protocol

from convrag.config import Settings
from convrag.embeddings import Embedder
from convrag.rerank import HttpReranker
from convrag.retrieval.calibration import NullScales
from convrag.retrieval.search import HybridSearcher
from convrag.stores.database import Database


class WingServices(Protocol):
    """The stores, models and searcher the wing calls."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def searcher(self) -> HybridSearcher: ...

    @property
    def sentences(self) -> Embedder:
        """The embedder that weighs sentences against a question."""

    @property
    def nulls(self) -> NullScales:
        """Each workspace's null (:mod:`convrag.retrieval.calibration`)."""

    @property
    def reranker(self) -> HttpReranker | None: ...
