"""WebSearch against the Serper stub: what a search returns."""

from __future__ import annotations

from convrag.testing.serper_stub import SerperReply, SerperStub
from convrag.web import WebSearch


async def test_the_answer_box_source_without_a_link_has_an_encoded_search_url() -> None:
    async with SerperStub() as stub, WebSearch.open("k", base_url=stub.base_url) as web:
        stub.add_rule(None, SerperReply(answer_box={"answer": "Sunny, 21 °C"}, organic=[]))
        [hit] = await web.search("What is the weather today?")
    assert hit["url"] == "https://www.google.com/search?q=What+is+the+weather+today%3F"
    assert hit["snippet"] == "Sunny, 21 °C"


async def test_results_lose_the_nul_bytes_and_lone_surrogates_postgres_cannot_store() -> None:
    page = {
        "title": "A\u0000 title",
        "link": "https://example.com/a",
        "snippet": "Some \ud800text\u0000.",
    }
    async with SerperStub() as stub, WebSearch.open("k", base_url=stub.base_url) as web:
        stub.add_rule(None, SerperReply(organic=[page]))
        [hit] = await web.search("anything")
    assert hit == {"title": "A title", "url": "https://example.com/a", "snippet": "Some text."}
