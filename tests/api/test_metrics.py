"""``/metrics``: every 4xx/5xx answer is counted in ``convrag_http_errors_total`` under its
status, the refusals of the API key check included."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client.parser import text_string_to_metric_families

from convrag.services import Services
from convrag.testing.openai_stub import OpenAIStub, Reply
from tests.conftest import use_stub_llm
from tests.test_server import rate_limited


async def _counts(client: httpx.AsyncClient, base: str, name: str, label: str) -> dict[str, float]:
    """The counter ``name`` (without ``_total``) by ``label``, as a Prometheus scrape
    reads it."""
    text = (await client.get(f"{base}/metrics")).text
    return {
        sample.labels[label]: sample.value
        for family in text_string_to_metric_families(text)
        if family.name == name
        for sample in family.samples
        if sample.name == f"{name}_total"
    }


async def _http_errors(client: httpx.AsyncClient, base: str) -> dict[str, float]:
    """``convrag_http_errors_total`` by status."""
    return await _counts(client, base, "convrag_http_errors", "status")


async def test_401_and_429_answers_are_counted_under_their_status(
    app_server: tuple[str, FastAPI], tenant: dict[str, str]
) -> None:
    base, app = app_server
    with rate_limited(app, 1):
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


async def test_a_stopped_turn_counts_as_stopped_and_a_refused_message_as_no_turn(
    app_server: tuple[str, FastAPI],
    tenant: dict[str, str],
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``convrag_turns_total{outcome}``: a stop is neither answered nor failed, and a
    message refused with 409 (the conversation is answering) never started a turn."""
    base, _ = app_server
    auth = {"Authorization": f"Bearer {tenant['key']}"}
    # Slow enough that the stop lands mid-answer: a bound, not a measurement.
    slow = Reply(content="Prasad Chaudhari's basic salary " * 20 + "[1].", token_delay_s=0.3)
    async with OpenAIStub() as stub, httpx.AsyncClient(timeout=30) as client:
        stub.add_rule("CURRENT QUESTION", slow)
        use_stub_llm(services, monkeypatch, stub.base_url)
        conv = (await client.post(f"{base}/v1/conversations", headers=auth)).json()[
            "conversation_id"
        ]
        url = f"{base}/v1/conversations/{conv}"
        turns_before = await _counts(client, base, "convrag_turns", "outcome")
        errors_before = await _http_errors(client, base)
        refused = stopped = None
        async with client.stream(
            "POST", f"{url}/messages", json={"content": "What is the basic salary?"}, headers=auth
        ) as resp:
            async for line in resp.aiter_lines():
                if line == "event: token" and stopped is None:
                    refused = await client.post(
                        f"{url}/messages",
                        json={"content": "And John Doe?"},
                        headers={**auth, "Accept": "application/json"},
                    )
                    stopped = await client.post(f"{url}/stop", headers=auth)
        turns_after = await _counts(client, base, "convrag_turns", "outcome")
        errors_after = await _http_errors(client, base)
    assert refused is not None and refused.status_code == 409
    assert stopped is not None and stopped.json()["stopped"] is True
    grown = {k: turns_after.get(k, 0) - turns_before.get(k, 0) for k in ("ok", "error", "stopped")}
    assert grown == {"ok": 0, "error": 0, "stopped": 1}
    assert errors_after.get("409", 0) - errors_before.get("409", 0) == 1
