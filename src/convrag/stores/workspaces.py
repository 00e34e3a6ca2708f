"""Workspaces' embedding model and index state, and their API keys (stored as hashes)."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from convrag.ids import is_uuid
from convrag.stores.base import PooledStore, without_timeouts


def hash_key(key: str) -> str:
    """API keys are stored as their SHA-256: a leaked table does not leak keys."""
    return hashlib.sha256(key.encode()).hexdigest()


FINGERPRINT_CHARS = 12
"""Hex digits of a key's SHA-256 shown to identify it (48 bits: enough to tell keys apart,
nothing towards the key)."""


@dataclass(frozen=True, slots=True)
class ApiKeyRecord:
    """An API key as it may be shown: never the key, only what identifies it."""

    id: str
    prefix: str
    """The key's first 8 characters (``crk_`` and 4 more), stored for recognising it."""
    fingerprint: str
    """The first :data:`FINGERPRINT_CHARS` hex digits of the key's SHA-256."""
    created_at: datetime
    revoked_at: datetime | None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None


#: An API key's columns as :class:`ApiKeyRecord` takes them.
_KEY_COLUMNS = f"""SELECT id::text AS id, prefix,
                        left(key_hash, {FINGERPRINT_CHARS}) AS fingerprint, created_at, revoked_at
                 FROM api_keys"""


#: One request against a key's bucket (see :meth:`WorkspaceStore.take_request_token`):
#: refill ``cap`` tokens per minute since the last request, capped at ``cap``, then take
#: one if a whole one is there.
_TAKE_TOKEN = """
INSERT INTO rate_limits AS b (key_hash, tokens, passed, updated_at)
VALUES (%(k)s, %(cap)s - 1, TRUE, clock_timestamp())
ON CONFLICT (key_hash) DO UPDATE
SET (tokens, passed, updated_at) = (
    SELECT CASE WHEN r.tokens >= 1 THEN r.tokens - 1 ELSE r.tokens END, r.tokens >= 1, r.at
    FROM (SELECT least(%(cap)s, b.tokens + %(cap)s / 60.0 * greatest(0.0,
                       extract(epoch FROM clock_timestamp() - b.updated_at)::float8)) AS tokens,
                 greatest(b.updated_at, clock_timestamp()) AS at) r)
RETURNING tokens, passed"""


class WorkspaceStore(PooledStore):
    """Each workspace's index (the model of its vectors) and its API keys."""

    async def claim_embedding_model(self, workspace_id: str, model: str) -> str:
        """The embedding model of the workspace's vectors: the recorded one, or ``model``
        recorded now when none is (a new workspace, or one from before the record)."""
        row = await self.fetch_one(
            """INSERT INTO workspaces (id, embedding_model) VALUES (%s, %s)
               ON CONFLICT (id) DO UPDATE SET embedding_model =
                   COALESCE(workspaces.embedding_model, EXCLUDED.embedding_model)
               RETURNING embedding_model""",
            (workspace_id, model),
        )
        assert row is not None
        return str(row["embedding_model"])

    async def index_state(self, workspace_id: str) -> tuple[int, str | None]:
        """The workspace's ``index_version`` and the embedding model of its vectors (None
        when not recorded), in one read."""
        row = await self.fetch_one(
            "SELECT index_version, embedding_model FROM workspaces WHERE id = %s", (workspace_id,)
        )
        if row is None:
            return 0, None
        return int(row["index_version"]), row["embedding_model"]

    async def reindexable_chunks(
        self, workspace_id: str
    ) -> list[tuple[str, str, str, str | None, list[str] | None]]:
        """Every (chunk_id, document_id, text, document title, headings) of a workspace,
        in document order: what ingest embedded, to embed again."""
        rows = await self.fetch_all_unhurried(
            """SELECT c.id::text AS id, c.document_id::text AS d, c.text, d.title,
                      c.metadata->'heading' AS heading
               FROM chunks c JOIN documents d ON d.id = c.document_id
               WHERE c.workspace_id = %s ORDER BY c.document_id, c.position""",
            (workspace_id,),
        )
        return [(r["id"], r["d"], r["text"], r["title"], r["heading"]) for r in rows]

    async def store_reindexed(
        self, workspace_id: str, vectors: Sequence[tuple[str, bytes]], model: str | None = None
    ) -> None:
        """Replace the stored vectors of these chunks; with ``model`` (the last batch of a
        reindex), also record it as the workspace's and move its ``index_version``, in the
        same transaction."""
        async with self.pool.connection() as conn, conn.transaction():
            await without_timeouts(conn)
            if vectors:
                async with conn.cursor() as cur:
                    await cur.executemany(
                        "UPDATE chunks SET embedding = %s WHERE workspace_id = %s AND id = %s",
                        [(blob, workspace_id, cid) for cid, blob in vectors],
                    )
            if model is not None:
                await conn.execute(
                    """UPDATE workspaces SET embedding_model = %s,
                              index_version = index_version + 1
                       WHERE id = %s""",
                    (model, workspace_id),
                )

    async def index_version(self, workspace_id: str) -> int:
        """The workspace's ``index_version``: it moves whenever its chunks change, so
        the in-process search engines reload when it is not the one they loaded."""
        return (await self.index_state(workspace_id))[0]

    async def create_api_key(self, workspace_id: str) -> str:
        """Issue a new key for the workspace; only its hash is stored."""
        await self.ensure_workspace(workspace_id)
        key = "crk_" + secrets.token_urlsafe(32)
        await self.execute(
            "INSERT INTO api_keys (workspace_id, key_hash, prefix) VALUES (%s, %s, %s)",
            (workspace_id, hash_key(key), key[:8]),
        )
        return key

    async def revoke_api_key(self, key: str) -> bool:
        """Revoke a key; returns False when it was unknown or already revoked."""
        revoked = await self.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE key_hash = %s AND revoked_at IS NULL",
            (hash_key(key),),
        )
        return revoked > 0

    async def find_api_keys(self, ref: str, workspace_id: str | None = None) -> list[ApiKeyRecord]:
        """The keys, revoked ones included, that ``ref`` names the way ``keys list`` shows
        them: the key itself, its id or the start of it, its ``prefix``, or its
        fingerprint or the start of it; only the workspace's when ``workspace_id`` is given.
        """
        escaped = ref.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = await self.fetch_all(
            f"""{_KEY_COLUMNS}
               WHERE (%(ws)s::text IS NULL OR workspace_id = %(ws)s)
                 AND (key_hash = %(hash)s OR prefix = %(ref)s
                      OR id::text LIKE %(start)s OR key_hash LIKE %(start)s)
               ORDER BY created_at, id""",
            {"ws": workspace_id, "hash": hash_key(ref), "ref": ref, "start": escaped + "%"},
        )
        return [ApiKeyRecord(**r) for r in rows]

    async def revoke_api_key_id(self, key_id: str) -> bool:
        """Revoke the key with this id; False when it is unknown or already revoked."""
        if not is_uuid(key_id):
            return False
        revoked = await self.execute(
            "UPDATE api_keys SET revoked_at = now() WHERE id = %s AND revoked_at IS NULL",
            (key_id,),
        )
        return revoked > 0

    async def take_request_token(self, key: str, per_minute: int) -> float | None:
        """Count one request of API key ``key`` against its token bucket of ``per_minute``
        requests, refilled continuously; None when it may pass, else the seconds until
        a token is back.

        One statement: every worker sharing this database shares the bucket, and a
        request pays one round trip. A refused request takes no token.
        """
        row = await self.fetch_one(_TAKE_TOKEN, {"k": hash_key(key), "cap": float(per_minute)})
        if row is None or row["passed"]:
            return None
        return (1.0 - float(row["tokens"])) * 60.0 / per_minute

    async def list_api_keys(self, workspace_id: str) -> list[ApiKeyRecord]:
        """The workspace's keys, oldest first, revoked ones included; never the keys
        themselves (only their hashes are stored)."""
        rows = await self.fetch_all(
            f"{_KEY_COLUMNS} WHERE workspace_id = %(ws)s ORDER BY created_at, id",
            {"ws": workspace_id},
        )
        return [ApiKeyRecord(**r) for r in rows]

    async def workspace_for_key(self, key: str) -> str | None:
        """The workspace of API key ``key``; None when it is unknown or revoked."""
        row = await self.fetch_one(
            "SELECT workspace_id FROM api_keys WHERE key_hash = %s AND revoked_at IS NULL",
            (hash_key(key),),
        )
        return None if row is None else str(row["workspace_id"])
