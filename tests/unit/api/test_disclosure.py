"""What the API shows of the server itself: a document ingested from the server's disk
is listed by its file name, never the absolute path that tells every key holder how the
server's disk is laid out."""

from __future__ import annotations

from convrag.api.schemas import shown_source


def test_uploads_and_records_are_shown_by_their_own_names() -> None:
    assert shown_source({"source": "upload:notes.txt", "metadata": {}})["source"] == (
        "upload:notes.txt"
    )
    assert shown_source({"source": "faq-1", "metadata": None})["source"] == "faq-1"
    path = "/srv/docs/a.md"
    assert shown_source({"source": path, "metadata": {"path": path}})["source"] == "a.md"
