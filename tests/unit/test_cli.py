"""The console script's commands in-process, with the stores faked, and its helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from convrag.cli.serving import docs_workspace
from tests.test_cli import user_dirs

__all__ = ["user_dirs"]


def test_keys_revoke_names_every_active_key_a_name_matches_and_revokes_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two keys whose ids start alike (random ids rarely do, so the store is faked)."""
    from collections.abc import AsyncIterator
    from contextlib import asynccontextmanager
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from typer.testing import CliRunner

    import convrag.services
    from convrag.admin import Opened
    from convrag.cli import app
    from convrag.stores.workspaces import ApiKeyRecord

    now = datetime.now(UTC)
    twins = [
        ApiKeyRecord(f"abcd{n}000-0000-4000-8000-000000000000", f"crk_{n}xyz", "0" * 12, now, None)
        for n in (1, 2)
    ]
    revoked: list[str] = []

    class Keys:
        async def find_api_keys(self, ref: str, workspace_id: str | None) -> list[ApiKeyRecord]:
            return [k for k in twins if k.id.startswith(ref)]

        async def revoke_api_key_id(self, key_id: str) -> bool:
            revoked.append(key_id)
            return True

    @asynccontextmanager
    async def fake_stores(needs: str, settings: object, **_: object) -> AsyncIterator[Opened]:
        yield Opened(db=SimpleNamespace(workspaces=Keys()))  # type: ignore[arg-type]

    monkeypatch.setattr("convrag.cli.remote.opened_for", fake_stores)
    monkeypatch.setattr("convrag.cli.remote.live_record", lambda data_dir: None)
    monkeypatch.setattr("convrag.cli.remote.check_store", lambda settings: None)
    monkeypatch.setattr(convrag.services, "install_sigterm_handler", lambda: None)

    both = CliRunner().invoke(app, ["keys", "revoke", "abcd"])
    assert both.exit_code == 1 and revoked == []
    assert "matches 2 active keys" in both.stderr
    assert twins[0].id in both.stderr and twins[1].id in both.stderr
    one = CliRunner().invoke(app, ["keys", "revoke", "abcd2"])
    assert one.exit_code == 0 and revoked == [twins[1].id]


@pytest.mark.parametrize(
    ("name", "workspace"),
    [("Team Handbook", "team-handbook"), ("Q3 Report.PDF", "q3-report"), ("a.jsonl.gz", "a")],
)
def test_serve_docs_names_the_workspace_after_the_folder_or_file(
    tmp_path: Path, name: str, workspace: str
) -> None:
    path = tmp_path / name
    if name.startswith("Team"):
        path.mkdir()
    else:
        path.write_bytes(b"x")
    assert docs_workspace(path) == workspace
