"""Graph fixtures: the assistant on the session's embedded stack, seeded documents, and the
OpenAI/Serper stubs reached through the real client code."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from convrag.assistant import Assistant, open_assistant
from convrag.ingest import ingest_documents, load_path
from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub
from convrag.testing.serper_stub import SerperStub
from convrag.tools.web_search import WebSearch

EMPLOYEES = """Prasad Chaudhari
Position: Software Engineer
Total Salary: $120,000
Basic Salary: $80,000
Allowances: $40,000

John Doe
Position: Software Engineer
Total Salary: $110,000
Basic Salary: $75,000
Allowances: $35,000

Maria Lopez
Position: Product Manager
Total Salary: $130,000
"""

HANDBOOK = """# Field handbook

## Section 1. How volcanic eruptions begin
Volcanic eruptions begin when magma rises through cracks in the crust. Magma chambers
collect molten rock several kilometres below the volcano. As the magma rises, dissolved gases
expand and the pressure builds until the rock above gives way. Geologists watch swelling
ground, small earthquakes and gas emissions for warning signs. Basaltic magma is runny and
erupts gently, while silica-rich magma is sticky and traps gas, which makes explosive
eruptions more likely.

## Section 2. Pyroclastic flows
Pyroclastic flows are fast-moving currents of hot gas and volcanic matter. They travel down
the slopes of a volcano at hundreds of kilometres per hour and reach temperatures above 700
degrees Celsius. Nothing in their path survives, and they can cross water for short
distances. Evacuation before an eruption is the only protection, which is why exclusion zones
around active volcanoes are enforced strictly by civil protection agencies.

## Section 3. Lava domes and ash columns
Lava domes form when viscous lava piles up over the volcanic vent. Dome collapse can trigger
further pyroclastic flows and tall ash columns. Volcanic ash is made of tiny glass and rock
fragments that damage jet engines, so aviation authorities close airspace during big
eruptions. Ash fall also contaminates water supplies and can collapse roofs when it gets wet
and heavy, so residents sweep roofs and cover wells.

## Section 4. Sunlight and watering for tomatoes
Tomato plants need six to eight hours of direct sunlight every day to set fruit. Water
tomatoes deeply twice a week rather than a little every day, so the roots grow down into the
soil. Mulch with straw to keep the soil moist and cool, and water at the base of the plant to
keep the leaves dry, which prevents blight. Containers dry out faster than beds and may need
daily watering during hot summer weeks.

## Section 5. Pruning and staking tomatoes
Prune tomato suckers, the shoots that grow between the main stem and a branch, to focus the
plant's energy on fruit. Indeterminate varieties keep growing all season and need tall stakes
or cages, while determinate bush varieties stop at a fixed height. Tie the stems loosely with
soft twine so they do not snap in the wind, and remove yellow lower leaves to improve air flow
around the plant.

## Section 6. Harvesting tomatoes
Harvest tomatoes when they are fully coloured and slightly soft to the touch. Fruit picked at
the first blush of colour can ripen indoors on a windowsill without losing flavour. Never
refrigerate ripe tomatoes, because cold destroys their aroma and makes the flesh mealy. At the
end of the season, green tomatoes can be fried, pickled or turned into chutney.
"""


@pytest.fixture
async def assistant(services: Services) -> AsyncIterator[Assistant]:
    async with open_assistant(services=services) as bot:
        yield bot
    await services.drain()


@pytest.fixture
async def seeded(services: Services, workspace: str, tmp_path: Path) -> str:
    files = {"employee_data.txt": EMPLOYEES, "handbook.md": HANDBOOK}
    docs = []
    for name, text in files.items():
        p = tmp_path / name
        p.write_text(text)
        docs.extend(load_path(p, max_bytes=10**6))
    await ingest_documents(services, workspace, docs)
    return workspace


async def doc_id(services: Services, workspace: str, name: str) -> str:
    for d in await services.db.list_documents(workspace):
        if str(d["source"]).endswith(name):
            return str(d["id"])
    raise AssertionError(f"{name} not ingested")


@pytest.fixture
async def llm(services: Services, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[OpenAIStub]:
    """An OpenAI-compatible stub; the services' settings point langchain-openai at it."""
    async with OpenAIStub() as stub:
        monkeypatch.setattr(
            services, "settings",
            services.settings.model_copy(update={
                "openai_base_url": stub.base_url,
                "openai_api_key": __import__("pydantic").SecretStr("test-key"),
                "llm_model": "openai:stub-model",
            }),
        )
        yield stub


@pytest.fixture
async def serper(services: Services, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SerperStub]:
    """A Serper stub, reached by the real wrapper through SERPER_BASE_URL's middleware."""
    async with SerperStub() as stub:
        web = WebSearch("serper-test-key", base_url=stub.base_url)
        monkeypatch.setattr(services, "web", web)
        yield stub
        await web.aclose()


__all__ = ["doc_id", "replace"]
