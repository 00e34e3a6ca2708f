"""Sources and similarities for the answer tests."""

from __future__ import annotations

from collections.abc import Sequence

from convrag.records import Source


def source(text: str, n: int = 0, title: str | None = None) -> Source:
    """A chunk source holding ``text``, numbered ``n`` in its ids."""
    return Source(
        id=f"00000000-0000-0000-0000-00000000000{n}",
        source_type="chunk",
        document_id=f"d{n}",
        title=title,
        text=text,
        url=None,
        score=1.0,
    )


def equally_close(query: str, texts: Sequence[str]) -> list[float]:
    """A similarity that ranks no sentence above another: the words decide."""
    return [0.5 for _ in texts]
