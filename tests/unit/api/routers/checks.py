"""Checks that more than one router's tests make."""

from __future__ import annotations

import uuid

import httpx


async def assert_the_same_404(
    api: httpx.AsyncClient, auth: dict[str, str], theirs: str, kind: str, paths: list[str]
) -> None:
    """Another workspace's ``theirs``, an unknown id and a malformed one each get the same
    404 naming the ``kind`` and the id, from every ``METHOD /path/{id}`` of ``paths``: no
    answer tells whether the id exists elsewhere."""
    for an_id in (theirs, str(uuid.uuid4()), "not-an-id"):
        for route in paths:
            method, path = route.split(" ", 1)
            resp = await api.request(method, path.format(id=an_id), headers=auth)
            assert resp.status_code == 404, (method, path, an_id)
            assert resp.json()["detail"] == f"{kind} {an_id} not found"


def assert_422_naming(resp: httpx.Response, field: str, sent: object = None) -> None:
    """``resp`` is the 422 whose errors name ``field`` and nothing else; ``sent`` (what the
    request held) is shown when it is not."""
    assert resp.status_code == 422, (sent, resp.text)
    assert [e["field"] for e in resp.json()["errors"]] == [field], sent
