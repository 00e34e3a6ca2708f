"""``/healthz`` and ``/metrics``: answered without a key, from what the stores say."""

from __future__ import annotations

import httpx

from tests.api.fakes import FakeStack


async def test_health_is_ok_without_a_key_when_every_store_answers(
    api: httpx.AsyncClient,
) -> None:
    resp = await api.get("/healthz")
    assert resp.status_code == 200
    assert resp.json() == {
        "status": "ok",
        "postgres": True,
        "milvus": True,
        "disk": True,
        "detail": None,
    }


async def test_a_head_probe_of_health_gets_200_and_no_body(api: httpx.AsyncClient) -> None:
    resp = await api.head("/healthz")
    assert resp.status_code == 200
    assert resp.content == b""


async def test_health_is_degraded_503_naming_postgres_when_it_does_not_answer(
    api: httpx.AsyncClient, stack: FakeStack
) -> None:
    stack.db.up = False
    resp = await api.get("/healthz")
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "3"
    body = resp.json()
    assert (body["status"], body["postgres"], body["milvus"]) == ("degraded", False, True)
    assert body["detail"] == "PostgreSQL does not answer within 1.5 s"


async def test_health_is_degraded_503_with_the_vector_indexs_problem(
    api: httpx.AsyncClient, stack: FakeStack
) -> None:
    stack.index.problem_text = "the collection is not loaded"
    resp = await api.get("/healthz")
    assert resp.status_code == 503
    body = resp.json()
    assert (body["postgres"], body["milvus"]) == (True, False)
    assert body["detail"] == "the collection is not loaded"


async def test_metrics_are_prometheus_text_without_a_key(api: httpx.AsyncClient) -> None:
    resp = await api.get("/metrics")
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/plain")
    for metric in ("convrag_turns_total", "convrag_http_errors_total", "convrag_feedback_total"):
        assert f"# TYPE {metric} counter" in resp.text
