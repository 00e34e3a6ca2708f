"""Documents before they are stored: files read into :class:`SourceDocument` objects
(:mod:`~convrag.documents.load`, with a reader per format: HTML, PDF, Word) and cut into
:class:`Chunk` objects on paragraph and sentence boundaries
(:mod:`~convrag.documents.chunking`). Nothing here touches a store; writing is
:mod:`convrag.ingest`'s."""

from convrag.documents.chunking import Chunk, Chunker
from convrag.documents.load import (
    SUPPORTED,
    IngestError,
    SourceDocument,
    expand_paths,
    load_path,
)

__all__ = [
    "SUPPORTED",
    "Chunk",
    "Chunker",
    "IngestError",
    "SourceDocument",
    "expand_paths",
    "load_path",
]
