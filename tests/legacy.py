"""Rows that earlier versions wrote and that existing deployments still hold."""

from __future__ import annotations

import asyncio
import uuid

from convrag.services import Services


async def legacy_memory_vector(
    services: Services, workspace_id: str, conversation_id: str, text: str
) -> str:
    """Write a conversation memory vector as versions before its removal wrote one for
    each answered turn (``kind = "memory"``, embedded ``Q: ... A: ...``); its id."""
    row_id = str(uuid.uuid4())
    vector = (await asyncio.to_thread(services.embedder.embed, [text]))[0]
    row = {
        "chunk_id": row_id,
        "workspace_id": workspace_id,
        "document_id": "",
        "kind": "memory",
        "conversation_id": conversation_id,
        "text": text,
        "dense": [float(x) for x in vector],
    }
    index = services.index
    await asyncio.to_thread(index.client.upsert, index.collection, [row])
    await asyncio.to_thread(index.flush)
    return row_id


async def conversation_vectors(services: Services, conversation_id: str) -> list[str]:
    """The ids of the vector index's rows of ``conversation_id``, of any kind."""
    index = services.index
    rows = await asyncio.to_thread(
        index.client.query,
        index.collection,
        filter=f'conversation_id == "{conversation_id}"',
        output_fields=["chunk_id"],
    )
    return [str(r["chunk_id"]) for r in rows]
