"""The ``convrag`` command line: config, ingest, reindex, search, ask, serve, keys, documents,
sweep, eval.

Every command honours ``CONVRAG_DATA_DIR`` (and the other settings), so two data
directories never mix.
"""

import gc

from convrag.cli import chat, documents, evaluate, keys, serving
from convrag.cli.base import app

COMMAND_MODULES = (documents, chat, serving, keys, evaluate)
"""The modules whose commands ``app`` carries: importing them registers their commands."""


def main() -> None:  # pragma: no cover - console entry
    """The console script: the app, then an exit that leaves the heap to the OS. The
    interpreter's last collections walk every object the stores' and the graph's
    libraries made (over a second at each command's end, measured); frozen, they are
    not walked."""
    try:
        app()
    finally:
        gc.freeze()


__all__ = ["app", "main"]
