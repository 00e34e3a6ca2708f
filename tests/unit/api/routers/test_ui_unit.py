"""``GET /``: the chat page and the files it loads, without a key."""

from __future__ import annotations

import re

import httpx


async def test_the_chat_page_is_html_under_a_policy_allowing_only_this_server(
    api: httpx.AsyncClient,
) -> None:
    resp = await api.get("/")
    assert resp.status_code == 200
    assert resp.headers["content-type"] == "text/html; charset=utf-8"
    policy = resp.headers["Content-Security-Policy"]
    assert "default-src 'none'" in policy
    assert "script-src 'self'" in policy
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.headers["Cache-Control"] == "no-cache"


async def test_a_head_probe_of_the_page_gets_200(api: httpx.AsyncClient) -> None:
    resp = await api.head("/")
    assert resp.status_code == 200
    assert resp.content == b""


async def test_every_script_and_style_the_page_loads_is_served(api: httpx.AsyncClient) -> None:
    page = (await api.get("/")).text
    assets = re.findall(r'(?:src|href)="(static/[^"]+)"', page)
    assert {a.rsplit(".", 1)[-1] for a in assets} == {"css", "js"}
    for asset in assets:
        resp = await api.get(f"/{asset}")
        assert resp.status_code == 200, asset
        assert resp.content
