"""The operational routes: /healthz says what is wrong, a full disk included."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from convrag.api.routers.operations import MIN_FREE_BYTES
from convrag.services import Services


async def test_health_is_degraded_when_the_data_directorys_disk_is_nearly_full(
    base_url: str, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = services.settings.data_dir
    disk_usage = shutil.disk_usage
    asked: list[Path] = []

    def nearly_full(path: Any) -> Any:
        asked.append(Path(path))
        total, used, _ = disk_usage(path)
        return type(disk_usage(path))(total, used, 4096)

    async with httpx.AsyncClient(timeout=30) as client:
        assert (await client.get(f"{base_url}/healthz")).json()["disk"] is True
        monkeypatch.setattr(shutil, "disk_usage", nearly_full)
        health = await client.get(f"{base_url}/healthz")
        head = await client.head(f"{base_url}/healthz")

    assert asked and asked[-1] == data_dir
    assert health.status_code == 503 and head.status_code == 503
    assert health.headers["retry-after"].isdigit()
    body = health.json()
    assert body["status"] == "degraded" and body["disk"] is False
    assert body["postgres"] is True and body["milvus"] is True
    assert f"the data directory {data_dir} has 4096 bytes free" in body["detail"]
    assert str(MIN_FREE_BYTES) in body["detail"]


async def test_health_names_a_store_that_does_not_answer(
    base_url: str, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def down(timeout: float) -> bool:
        return False

    monkeypatch.setattr(services.db, "ping", down)
    async with httpx.AsyncClient(timeout=30) as client:
        health = await client.get(f"{base_url}/healthz")
    assert health.status_code == 503
    body = health.json()
    assert body["postgres"] is False and body["disk"] is True
    assert body["detail"] == "PostgreSQL does not answer within 1.5 s"
