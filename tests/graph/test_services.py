"""Dependencies travel with the run: each assistant's graph uses the services it was given."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from convrag.assistant import open_assistant
from convrag.context import Context
from convrag.retrieval.search import HybridSearcher
from convrag.services import Services


class RecordingSearcher:
    """A searcher that notes each query and delegates to the real one."""

    def __init__(self, inner: HybridSearcher) -> None:
        self.inner = inner
        self.queries: list[str] = []

    def prefetch(self, query: str) -> None:
        self.inner.prefetch(query)

    async def search(self, workspace_id: str, query: str, **kwargs: Any) -> Any:
        self.queries.append(query)
        return await self.inner.search(workspace_id, query, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_two_assistants_in_one_process_each_use_their_own_services(
    services: Services, seeded: str
) -> None:
    first = RecordingSearcher(services.searcher)
    second = RecordingSearcher(services.searcher)
    mine = replace(services, searcher=first)  # type: ignore[arg-type]
    theirs = replace(services, searcher=second)  # type: ignore[arg-type]
    ctx = Context(workspace_id=seeded, llm_model="none")
    async with open_assistant(services=mine) as a, open_assistant(services=theirs) as b:
        await a.ask(
            "What is Prasad Chaudhari's salary?",
            await a.new_conversation(seeded),
            workspace_id=seeded,
            context=ctx,
        )
        await b.ask(
            "How many days of annual leave?",
            await b.new_conversation(seeded),
            workspace_id=seeded,
            context=ctx,
        )
    assert first.queries == ["What is Prasad Chaudhari's salary?"]
    assert second.queries == ["How many days of annual leave?"]
