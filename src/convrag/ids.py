"""Every id rule in one place: what a valid id looks like and how derived ids are made.

Workspace ids are interpolated into Milvus filter expressions, so they are limited to a
safe alphabet. Conversations, documents, chunks, turns and web sources are UUIDs; the
derived ones are UUID5s so that the same input always maps to the same row.
"""

from __future__ import annotations

import hashlib
import re
import uuid

DEFAULT_WORKSPACE = "default"
"""The workspace of a run that names none."""

_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")
_CONVERSATION_NS = uuid.UUID("6e3f1c52-2b7d-4c09-8d0b-4b1f7f0d2a11")
_DOCUMENT_NS = uuid.UUID("5b2f4d1e-0c8a-4f43-9a51-7c1f2e9b6a10")
_WEB_NS = uuid.UUID("0b6c2f1e-8f0e-4a8f-9d43-2f0c3c6f7a55")


def check_id(value: str, what: str = "workspace") -> str:
    """``value`` if it is a safe id, else a ``ValueError`` naming the allowed alphabet."""
    if not _SAFE_ID.match(value):
        raise ValueError(
            f"invalid {what} id {value!r}: use 1-64 characters from A-Z a-z 0-9 _ . : @ -"
        )
    return value


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def canonical_uuid(value: str) -> str | None:
    """``value`` as the one spelling ids are stored and locked under (36 characters,
    lower case), or None when it is not that UUID form.

    ``uuid.UUID`` also accepts ``urn:uuid:…``, braces and missing hyphens; taking those
    would give one conversation several spellings (and lock keys).
    """
    return value.lower() if _UUID.fullmatch(value) else None


def is_uuid(value: str) -> bool:
    """Whether ``value`` is a UUID in its canonical form (any case)."""
    return canonical_uuid(str(value)) is not None


def conversation_uuid(value: str) -> str:
    """Conversation ids are UUIDs; any other thread id maps to a stable UUID5."""
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return str(uuid.uuid5(_CONVERSATION_NS, value))


def document_id_for(workspace_id: str, source: str) -> str:
    """A document's id: stable per workspace and source name, so re-ingest replaces it."""
    return str(uuid.uuid5(_DOCUMENT_NS, f"{workspace_id}\x00{source}"))


def chunk_id_for(document_id: str, position: int, text: str) -> str:
    """A chunk's id: its document, position and content, so unchanged chunks keep theirs."""
    digest = hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()
    return str(uuid.uuid5(uuid.UUID(document_id), f"{position}:{digest}"))


def web_source_id(url: str) -> str:
    """A web result's source id: a UUID5 of its URL."""
    return str(uuid.uuid5(_WEB_NS, url))
