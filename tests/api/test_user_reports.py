"""What a new user met, over HTTP, as they met it (issue "Answers a user can trust")."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from convrag.services import Services
from tests import test_server as server_tests

_auth = server_tests._auth

FAQ = b"""<!doctype html><html><head><title>IT FAQ</title></head><body>
<nav><a href="/">Home</a> | <a href="/it">IT</a> | <a href="/hr">HR</a></nav>
<main><h1>IT questions</h1>
<h2>Network</h2>
<p>Which VPN do we use? We use <a href="https://www.wireguard.com">WireGuard</a> through the
<b>corp-vpn</b> gateway on every company laptop.</p>
<p>Who resets passwords? The service desk resets passwords within one working day.</p>
</main>
<footer>Copyright Acme Corp. Privacy. Cookies.</footer></body></html>"""

HISTORY = b"""Sardar Vallabhbhai Patel was an Indian lawyer and statesman who led the integration of
the princely states into the Indian Union after independence. He organised peasant
campaigns in Kheda and Bardoli against British tax policies.

Sickle cell disease is an inherited blood disorder. Treatment for sickle cell disease may
include antibiotics, pain medication and blood transfusions. Severe sickle cell disease can
shorten life expectancy, and some complications such as stroke can be fatal."""


async def _upload(
    client: httpx.AsyncClient, base: str, tenant: dict[str, str], name: str, data: bytes
) -> None:
    resp = await client.post(
        f"{base}/v1/documents", files={"file": (name, data)}, headers=_auth(tenant)
    )
    assert resp.status_code == 202, resp.text
    for _ in range(300):
        doc = (
            await client.get(f"{base}/v1/documents/{resp.json()['id']}", headers=_auth(tenant))
        ).json()
        if doc["status"] != "processing":
            break
        await asyncio.sleep(0.1)
    assert doc["status"] == "ready", doc


async def _ask(
    client: httpx.AsyncClient, base: str, tenant: dict[str, str], conv: str, question: str
) -> dict[str, Any]:
    resp = await client.post(
        f"{base}/v1/conversations/{conv}/messages",
        json={"content": question},
        headers={**_auth(tenant), "Accept": "application/json"},
    )
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


async def test_an_html_faq_is_answered_with_its_answer_not_its_question(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        await _upload(client, base_url, tenant, "faq.html", FAQ)
        conv = (await client.post(f"{base_url}/v1/conversations", headers=_auth(tenant))).json()[
            "conversation_id"
        ]
        reply = await _ask(client, base_url, tenant, conv, "Which VPN do we use?")
    assert "WireGuard through the corp-vpn gateway" in reply["answer"]
    assert "Which VPN do we use?" not in reply["answer"]
    assert "Cookies" not in reply["answer"] and reply["citations"]


async def test_follow_ups_keep_low_evidence_pronouns_and_greetings_are_not_follow_ups(
    base_url: str, tenant: dict[str, str], services: Services
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        await _upload(client, base_url, tenant, "history.txt", HISTORY)

        async def conversation(*questions: str) -> list[dict[str, Any]]:
            conv = (
                await client.post(f"{base_url}/v1/conversations", headers=_auth(tenant))
            ).json()["conversation_id"]
            return [await _ask(client, base_url, tenant, conv, q) for q in questions]

        patel = await conversation("what was the indian independence movement?", "what did he do?")
        sickle = await conversation("How is Sickle cell treated?", "Will it kill me?")
        hello = await conversation("Who was Sardar Patel?", "hello, who are you?")
    assert "What did Indian do" not in patel[1]["rewritten_query"]
    assert "Sickle kill" not in sickle[1]["rewritten_query"]
    assert hello[1]["classification"] != "follow_up"


async def test_every_field_of_a_record_is_answered_not_only_the_salary(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        conv = (await client.post(f"{base_url}/v1/conversations", headers=_auth(tenant))).json()[
            "conversation_id"
        ]
        position = await _ask(client, base_url, tenant, conv, "What is John Doe's position?")
        manager = await _ask(client, base_url, tenant, conv, "Who is the Product Manager?")
        france = await _ask(client, base_url, tenant, conv, "What is the capital of France?")
    assert not position["no_answer"] and "Software Engineer" in position["answer"]
    assert not manager["no_answer"] and "Maria Lopez" in manager["answer"]
    assert france["no_answer"]
