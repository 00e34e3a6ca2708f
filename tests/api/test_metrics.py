"""``/metrics``: every 4xx/5xx answer is counted in ``convrag_http_errors_total`` under its
status, the refusals of the API key check included."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from convrag.api.deps import RateLimiter


async def _http_errors(client: httpx.AsyncClient, base: str) -> dict[str, float]:
    """``convrag_http_errors_total`` by status, as a Prometheus scrape reads it."""
    text = (await client.get(f"{base}/metrics")).text
    return {
        sample.labels["status"]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "convrag_http_errors"
        for sample in family.samples
        if sample.name == "convrag_http_errors_total"
    }


async def test_401_and_429_answers_are_counted_under_their_status(
    app_server: tuple[str, FastAPI], tenant: dict[str, str]
) -> None:
    base, app = app_server
    saved = app.state.limiter
    app.state.limiter = RateLimiter(1)
    try:
        async with httpx.AsyncClient(timeout=30) as client:
            before = await _http_errors(client, base)
            statuses = [
                (await client.get(f"{base}/v1/documents", headers=headers)).status_code
                for headers in (
                    {},
                    {"Authorization": "Basic abc"},
                    {"Authorization": "Bearer not-a-key"},
                    {"Authorization": f"Bearer {tenant['key']}"},
                    {"Authorization": f"Bearer {tenant['key']}"},
                )
            ]
            after = await _http_errors(client, base)
    finally:
        app.state.limiter = saved
    assert statuses == [401, 401, 401, 200, 429]
    assert after.get("401", 0) - before.get("401", 0) == 3
    assert after.get("429", 0) - before.get("429", 0) == 1


async def test_every_error_answer_is_counted_once_the_routers_own_included(
    app_server: tuple[str, FastAPI], tenant: dict[str, str]
) -> None:
    base, _ = app_server
    auth = {"Authorization": f"Bearer {tenant['key']}"}
    missing = "00000000-0000-4000-8000-000000000000"
    async with httpx.AsyncClient(timeout=30) as client:
        before = await _http_errors(client, base)
        statuses = [
            (await client.get(f"{base}/v1/no-such-route", headers=auth)).status_code,
            (await client.put(f"{base}/v1/documents", headers=auth)).status_code,
            (await client.get(f"{base}/v1/conversations/{missing}", headers=auth)).status_code,
            (await client.get(f"{base}/v1/conversations?limit=-1", headers=auth)).status_code,
        ]
        after = await _http_errors(client, base)
    assert statuses == [404, 405, 404, 422]
    grown = {s: after.get(s, 0) - before.get(s, 0) for s in ("404", "405", "422")}
    assert grown == {"404": 2, "405": 1, "422": 1}
