"""Workspace API keys: create, list, revoke."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from convrag.cli.base import WorkspaceOpt, fail, keys_app, say_note, workspace_option
from convrag.cli.remote import operate


@keys_app.command("create")
def keys_create(workspace: WorkspaceOpt) -> None:
    """Issue an API key for a workspace; prints the key alone (it is stored hashed)."""
    done = operate("keys-create", workspace=workspace)
    say_note(done["note"])
    print(done["key"])


@keys_app.command("list")
def keys_list(workspace: WorkspaceOpt) -> None:
    """List a workspace's API keys as JSON lines, revoked ones included, without the keys.

    Keys are stored as their SHA-256 only, so a key is shown by its id, its first 8
    characters and a fingerprint: the first 12 hex digits of its SHA-256 (to match a key
    you hold: ``printf %s "$KEY" | sha256sum | cut -c1-12``).
    """
    for k in operate("keys-list", workspace=workspace)["keys"]:
        print(json.dumps(k))


#: The fewest characters of an id or fingerprint ``keys revoke`` takes as naming a key.
MIN_KEY_REF_CHARS = 4


@keys_app.command("revoke")
def keys_revoke(
    key: Annotated[
        str,
        typer.Argument(
            metavar="KEY_OR_ID",
            help="The key, or how `keys list` shows it: its id (or the first 4 or more "
            "characters of it), its prefix, or its fingerprint.",
        ),
    ],
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace",
            "-w",
            metavar="WORKSPACE",
            help="Look only among this workspace's keys.",
            callback=workspace_option,
        ),
    ] = None,
) -> None:
    """Revoke an API key (a running server stops accepting it within 30 s).

    Name it by the key itself or by what ``keys list`` shows of it; a name that matches
    no key, or more than one active key, revokes nothing and says so (exit 1).
    """
    ref = key.strip()
    # A whole key is a secret: messages show only its prefix, as `keys list` does.
    shown = f"{ref[:8]}…" if ref.startswith("crk_") and len(ref) > 8 else ref
    if len(ref) < MIN_KEY_REF_CHARS:
        raise fail(
            f"{shown!r} is too short to name a key: give the key, its id, its prefix or "
            f"its fingerprint as `convrag keys list` shows them (at least "
            f"{MIN_KEY_REF_CHARS} characters)"
        )
    done = operate("keys-revoke", ref=ref, workspace=workspace)
    matched, revoked = done["matched"], done["revoked"]
    active = [k for k in matched if not k["revoked"]]
    where = f" in workspace {workspace}" if workspace else ""
    if len(active) > 1:
        listed = ", ".join(f"{k['id']} ({k['prefix']})" for k in active)
        raise fail(
            f"{shown!r} matches {len(active)} active keys{where}: {listed}; "
            "give more of the id, or the whole id",
            code=1,
        )
    if not revoked:
        if gone := active or matched:
            raise fail(f"key {gone[0]['id']} ({gone[0]['prefix']}) is already revoked", code=1)
        raise fail(
            f"no key{where} matches {shown!r}; `convrag keys list -w WORKSPACE` shows each "
            "key's id, prefix and fingerprint",
            code=1,
        )
    k = matched[0]
    print(json.dumps({"revoked": k["id"], "prefix": k["prefix"], "fingerprint": k["fingerprint"]}))
