"""``POST /admin/v1/<name>``: the command line's operations on a running service, opened
by the token of the service's record alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from convrag.service_record import RECORD_NAME, ServiceRecord, recorded
from convrag.services import Services


@pytest.fixture
def record(services: Services) -> Iterator[ServiceRecord]:
    """A service record in the served data directory, as `convrag serve` keeps one."""
    made = ServiceRecord.new("127.0.0.1", 1, services.settings)
    with recorded(services.settings.data_dir, made):
        yield made


async def test_the_record_token_runs_an_operation_and_a_workspace_key_does_not(
    base_url: str, tenant: dict[str, str], record: ServiceRecord
) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        admin = {"Authorization": f"Bearer {record.token}"}
        made = await client.post(
            "/admin/v1/keys-create", json={"workspace": tenant["workspace"]}, headers=admin
        )
        assert made.status_code == 200, made.text
        key = made.json()["key"]
        opened = await client.get("/v1/workspace", headers={"Authorization": f"Bearer {key}"})
        assert opened.json() == {"workspace": tenant["workspace"]}
        listed = await client.post(
            "/admin/v1/keys-list", json={"workspace": tenant["workspace"]}, headers=admin
        )
        assert key[:8] in [k["prefix"] for k in listed.json()["keys"]]
        found = await client.post(
            "/admin/v1/search",
            json={"workspace": tenant["workspace"], "query": "anything", "top_k": 2},
            headers=admin,
        )
        assert found.status_code == 200, found.text
        assert set(found.json()) == {"results", "note"} and len(found.json()["results"]) <= 2
        for wrong in (tenant["key"], "not-the-token", record.token[:-1]):
            refused = await client.post(
                "/admin/v1/keys-list",
                json={"workspace": tenant["workspace"]},
                headers={"Authorization": f"Bearer {wrong}"},
            )
            assert refused.status_code == 401 and "service's record" in refused.json()["detail"]
        spec = (await client.get("/openapi.json")).json()
    assert not [path for path in spec["paths"] if path.startswith("/admin")]


async def test_bad_requests_get_4xx_naming_the_problem(
    base_url: str, record: ServiceRecord
) -> None:
    admin = {"Authorization": f"Bearer {record.token}"}
    async with httpx.AsyncClient(base_url=base_url, timeout=60, headers=admin) as client:
        unknown = await client.post("/admin/v1/keys-burn", json={"workspace": "w"})
        bad_id = await client.post("/admin/v1/keys-create", json={"workspace": "../x"})
        extra = await client.post("/admin/v1/keys-list", json={"workspace": "w", "all": True})
        lost = await client.post(
            "/admin/v1/ask",
            json={"workspace": "w", "question": "Why?", "conversation": "nope"},
        )
    assert unknown.status_code == 404 and "keys-burn" in unknown.json()["detail"]
    assert bad_id.status_code == 422 and "invalid workspace id" in bad_id.json()["detail"]
    assert extra.status_code == 422 and "all" in extra.json()["detail"]
    assert lost.status_code == 422
    assert lost.json()["detail"].startswith("no conversation 'nope' in workspace 'w'")


async def test_without_a_record_the_operations_answer_404(
    base_url: str, services: Services
) -> None:
    assert not Path(services.settings.data_dir, RECORD_NAME).exists()
    async with httpx.AsyncClient(base_url=base_url, timeout=60) as client:
        hidden = await client.post(
            "/admin/v1/keys-list", json={"workspace": "w"}, headers={"Authorization": "Bearer x"}
        )
    assert hidden.status_code == 404 and "no such route" in hidden.json()["detail"]
