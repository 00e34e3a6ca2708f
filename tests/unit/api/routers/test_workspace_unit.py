"""``GET /v1/workspace`` and the API key check every ``/v1`` route shares."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.api.fakes import FakeStack, client, fake_app, fake_stack


async def test_a_key_is_told_its_workspace(api: httpx.AsyncClient, auth: dict[str, str]) -> None:
    resp = await api.get("/v1/workspace", headers=auth)
    assert resp.status_code == 200
    assert resp.json() == {"workspace": "acme"}


async def test_no_key_gets_a_401_saying_how_to_send_one(api: httpx.AsyncClient) -> None:
    resp = await api.get("/v1/workspace")
    assert resp.status_code == 401
    assert resp.headers["WWW-Authenticate"] == "Bearer"
    assert resp.json()["detail"].startswith("missing API key: send 'Authorization: Bearer <key>'")


async def test_another_auth_scheme_gets_a_401_naming_the_bearer_scheme(
    api: httpx.AsyncClient,
) -> None:
    resp = await api.get("/v1/workspace", headers={"Authorization": "Basic dXNlcjpwYXNz"})
    assert resp.status_code == 401
    assert "does not use the Bearer scheme" in resp.json()["detail"]
    assert "dXNlcjpwYXNz" not in resp.text


async def test_an_unknown_key_gets_a_401_invalid_or_revoked(api: httpx.AsyncClient) -> None:
    resp = await api.get("/v1/workspace", headers={"Authorization": "Bearer crk_nope"})
    assert resp.status_code == 401
    assert resp.json()["detail"] == "invalid or revoked API key"


async def test_a_key_over_its_rate_limit_gets_429_with_retry_after(tmp_path: Path) -> None:
    stack: FakeStack = fake_stack(tmp_path, rate_limit_per_minute=2)
    auth = await stack.key("acme")
    async with client(fake_app(stack)) as api:
        statuses = [(await api.get("/v1/workspace", headers=auth)).status_code for _ in range(3)]
        resp = await api.get("/v1/workspace", headers=auth)
    assert statuses == [200, 200, 429]
    assert resp.status_code == 429
    assert int(resp.headers["Retry-After"]) >= 1
    assert resp.json()["detail"] == "rate limit of 2 requests/minute exceeded"
