"""``GET /v1/workspace``: the workspace an API key opens, which the chat page names."""

from __future__ import annotations

import httpx


async def test_a_key_is_told_its_workspace_and_no_key_gets_the_401(
    base_url: str, tenant: dict[str, str]
) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        told = await client.get(
            "/v1/workspace", headers={"Authorization": f"Bearer {tenant['key']}"}
        )
        without = await client.get("/v1/workspace")
        revoked = await client.get(
            "/v1/workspace", headers={"Authorization": "Bearer crk_not-a-key"}
        )
        spec = (await client.get("/openapi.json")).json()
    assert told.status_code == 200 and told.json() == {"workspace": tenant["workspace"]}
    assert without.status_code == 401 and "Authorization: Bearer" in without.json()["detail"]
    assert revoked.status_code == 401
    assert revoked.json()["detail"] == "invalid or revoked API key"
    # Documented like its neighbours: its typed body, and the key's 401, 429 and 503.
    operation = spec["paths"]["/v1/workspace"]["get"]
    body = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/WorkspaceOut"}
    assert {"401", "429", "503"} <= set(operation["responses"])
    assert spec["components"]["schemas"]["WorkspaceOut"]["required"] == ["workspace"]
