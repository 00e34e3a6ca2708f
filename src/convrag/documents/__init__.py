"""Documents before they are stored: files read into
:class:`~convrag.documents.base.SourceDocument` objects (:mod:`~convrag.documents.load`,
with a reader per format: HTML, PDF, Word; what they share is
:mod:`~convrag.documents.base`) and cut into :class:`~convrag.documents.chunking.Chunk`
objects on paragraph and sentence boundaries (:mod:`~convrag.documents.chunking`).
Nothing here touches a store; writing is :mod:`convrag.ingest`'s."""
