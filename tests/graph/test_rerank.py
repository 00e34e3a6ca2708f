"""The reranker inside the graph: vector hits in its order, or the fused order kept."""

from __future__ import annotations

from dataclasses import replace

import aiohttp

from convrag.assistant import open_assistant
from convrag.context import Context
from convrag.rerank import HttpReranker
from convrag.services import Services
from tests.test_rerank import serving

QUESTION = "How fast do pyroclastic flows move?"


async def test_the_graph_reranks_vector_hits_and_records_a_fallback(
    services: Services, seeded: str
) -> None:
    async with (
        serving("hundreds of kilometres per hour") as (server, url),
        aiohttp.ClientSession() as session,
    ):
        reranked = replace(services, reranker=HttpReranker(f"{url}/rerank", session))
        ctx = Context(workspace_id=seeded, llm_model="none")
        async with open_assistant(services=reranked) as bot:
            conv = await bot.new_conversation(seeded)
            state = await bot.ask(QUESTION, conv, workspace_id=seeded, context=ctx)
            assert state["vector_hits"][0]["rerank_score"] == 1.0
            assert "hundreds of kilometres per hour" in state["vector_hits"][0]["text"]
            server.status = 500
            conv = await bot.new_conversation(seeded)
            failed = await bot.ask(QUESTION, conv, workspace_id=seeded, context=ctx)
    assert "500" in failed["flags"]["rerank_fallback"]
    assert failed["vector_hits"] and "rerank_score" not in failed["vector_hits"][0]
