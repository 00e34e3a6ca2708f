"""The graph's nodes, one module each, in the order a turn visits them.

Each node is a small async function of the state and the run's ``Runtime`` that returns
its typed update. How the graph runs them (timing, time limits, degrading) is in
:mod:`convrag.nodes.policy`; how they are wired is in :mod:`convrag.graph`.
"""

from convrag.nodes.check_repetition import check_repetition
from convrag.nodes.load_history import load_history
from convrag.nodes.persist import persist
from convrag.nodes.regenerate import regenerate
from convrag.nodes.retrieve_documents import retrieve_documents
from convrag.nodes.retrieve_vectors import retrieve_vectors
from convrag.nodes.rewrite import rewrite
from convrag.nodes.synthesize import synthesize
from convrag.nodes.web_search import web_search

__all__ = [
    "check_repetition",
    "load_history",
    "persist",
    "regenerate",
    "retrieve_documents",
    "retrieve_vectors",
    "rewrite",
    "synthesize",
    "web_search",
]
