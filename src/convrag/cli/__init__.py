"""The ``convrag`` command line: config, ingest, reindex, search, ask, serve, keys, documents,
sweep, eval.

Every command honours ``CONVRAG_DATA_DIR`` (and the other settings), so two data
directories never mix.
"""

from convrag.cli import chat, documents, evaluate, keys, serving
from convrag.cli.base import app

COMMAND_MODULES = (documents, chat, serving, keys, evaluate)
"""The modules whose commands ``app`` carries: importing them registers their commands."""


def main() -> None:  # pragma: no cover - console entry
    app()


__all__ = ["app", "main"]
