"""What the API shows of the server itself: a document ingested from the server's disk
is listed by its file name, never the absolute path that tells every key holder how the
server's disk is laid out."""

from __future__ import annotations

from pathlib import Path

import httpx

from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.services import Services


async def test_a_file_ingested_on_the_server_is_listed_by_its_name_not_its_path(
    base_url: str, tenant: dict[str, str], services: Services, tmp_path: Path
) -> None:
    nested = tmp_path / "srv" / "policies"
    nested.mkdir(parents=True)
    (nested / "travel.md").write_text("# Travel\n\nTrains are booked in second class.")
    await ingest_documents(
        services, tenant["workspace"], load_path(nested / "travel.md", max_bytes=10**6)
    )
    auth = {"Authorization": f"Bearer {tenant['key']}"}
    async with httpx.AsyncClient(timeout=30) as client:
        listed = (await client.get(f"{base_url}/v1/documents", headers=auth)).json()
        travel = next(d for d in listed if d["title"] == "Travel")
        one = (await client.get(f"{base_url}/v1/documents/{travel['id']}", headers=auth)).json()
    assert sorted(d["source"] for d in listed) == ["employee_data.txt", "travel.md"]
    assert one["source"] == "travel.md"
    assert str(tmp_path) not in str(listed)
    stored = await services.db.documents.get_document(tenant["workspace"], travel["id"])
    assert stored is not None and stored["source"] == str(nested / "travel.md")
