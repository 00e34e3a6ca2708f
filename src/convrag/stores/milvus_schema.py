"""The Milvus collection's layout: what the server supports, and the collection made to fit.

Milvus gained what the collection uses over several releases: upsert and the partition key
(2.3), sparse vectors (2.4), BM25 full-text search (2.5). A start reads the server's
version and lays the collection out for it: the BM25 sparse field, its function and its
index only where the server has BM25 (keyword search then runs in process, with bm25s,
elsewhere). A setting that asks for what the server lacks fails the start with one error
naming the minimum version.

The collection is made in steps (create, index, load); a step that fails drops what the
start created, so no half-made collection is left for the next start to load (a Milvus
2.3 server aborted on loading one whose sparse field it cannot index). A collection found
half-made (an index missing) is never loaded: an empty one, a failed start's leftover,
is made again; one holding rows is reported.
"""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass
from typing import Any

from pymilvus import DataType, Function, FunctionType, MilvusClient

log = logging.getLogger(__name__)

Release = tuple[int, int]

MILVUS_MIN: Release = (2, 3)
"""The oldest Milvus convrag runs on: upsert, the partition key and the query iterator."""

SPARSE_MIN: Release = (2, 4)
"""Sparse vector fields and their index."""

BM25_MIN: Release = (2, 5)
"""The BM25 function (full-text search in the server): ``KEYWORD_ENGINE=milvus``."""

UPSERT_MIN: Release = (2, 4)
"""Upsert that places a row by its partition key. Before it (2.3.5 at least) an upsert
hashed the wrong field to pick the partition (milvus-io/milvus#30772), so a row landed
where no workspace-filtered read looks: rows are then written as a delete and an insert."""

CHUNK_FIELDS = ("chunk_id", "workspace_id", "document_id", "kind", "conversation_id", "text")
"""The scalar fields every read and write names, beside the ``dense`` vector."""


def named(release: Release) -> str:
    """A release as its number is written: ``2.5``."""
    return f"{release[0]}.{release[1]}"


class MilvusUnsupported(ValueError):
    """The Milvus server lacks what convrag, or a setting, needs: names the minimum version.
    A ``ValueError``, as a setting's: a command exits 2 with its message alone."""


class CollectionUnusable(ValueError):
    """An existing collection that cannot be used as it is: half-made, or of another
    layout (a ``ValueError``, as :class:`MilvusUnsupported`)."""


@dataclass(frozen=True, slots=True)
class ServerFeatures:
    """What the Milvus server at hand supports, by its version."""

    version: str
    """The version as the server names it (``v2.3.5-lite``, ``milvus_lite-3.2.2``)."""
    release: Release | None
    """Its Milvus release; None for Milvus Lite, which has every feature used here, and for
    a version that names none (taken as current)."""

    @classmethod
    def of(cls, version: str) -> ServerFeatures:
        if version.startswith("milvus_lite"):
            return cls(version, None)
        found = re.search(r"(\d+)\.(\d+)", version)
        if found is None:
            log.warning("Milvus names its version %r: taken as a current release", version)
            return cls(version, None)
        return cls(version, (int(found.group(1)), int(found.group(2))))

    def has(self, minimum: Release) -> bool:
        return self.release is None or self.release >= minimum

    @property
    def bm25(self) -> bool:
        return self.has(BM25_MIN)

    @property
    def upsert(self) -> bool:
        return self.has(UPSERT_MIN)

    def require(self, minimum: Release, feature: str, remedy: str = "") -> None:
        """Raise :class:`MilvusUnsupported` unless the server has ``minimum``."""
        if not self.has(minimum):
            raise MilvusUnsupported(
                f"{feature} needs Milvus >= {named(minimum)}; the server at "
                f"MILVUS_URI is {self.version}{'; ' + remedy if remedy else ''}"
            )


USE_BM25S = "set KEYWORD_ENGINE=auto or bm25s (keyword search in process)"
"""The remedy when the server has no BM25: keyword search in process."""


def required_features(client: MilvusClient, *, bm25_required: bool) -> ServerFeatures:
    """The server's features, checked against what the settings ask of it: raises
    :class:`MilvusUnsupported` naming the minimum version when the server is too old for
    convrag, or for ``KEYWORD_ENGINE=milvus`` (``bm25_required``)."""
    features = server_features(client)
    if bm25_required:
        features.require(BM25_MIN, "KEYWORD_ENGINE=milvus (BM25 in Milvus)", USE_BM25S)
    return features


def server_features(client: MilvusClient) -> ServerFeatures:
    """The server's features; raises :class:`MilvusUnsupported` below :data:`MILVUS_MIN`."""
    features = ServerFeatures.of(str(client.get_server_version()))
    features.require(MILVUS_MIN, "convrag (upsert, the partition key, the query iterator)")
    return features


@dataclass(frozen=True, slots=True)
class Layout:
    """How a collection is laid out."""

    dim: int
    bm25: bool
    """Whether it has the BM25 sparse field, function and index."""


def create(
    client: MilvusClient, name: str, layout: Layout, *, is_lite: bool, consistency: str
) -> None:
    """Create, index and load the collection; on any failure drop it again and raise."""
    schema, index = _schema(client, layout, is_lite=is_lite)
    client.create_collection(name, schema=schema, consistency_level=consistency)
    try:
        client.create_index(name, index)
        client.load_collection(name)
    except BaseException:
        with contextlib.suppress(Exception):
            client.drop_collection(name)
        raise


def _schema(client: MilvusClient, layout: Layout, *, is_lite: bool) -> tuple[Any, Any]:
    """The collection's schema and index parameters for ``layout``."""
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("chunk_id", DataType.VARCHAR, max_length=64, is_primary=True)
    schema.add_field("workspace_id", DataType.VARCHAR, max_length=64, is_partition_key=True)
    schema.add_field("document_id", DataType.VARCHAR, max_length=64)
    # ``kind`` and ``conversation_id`` told conversation memory's rows apart: every
    # row written now is a chunk, but a collection keeps one schema across versions.
    schema.add_field("kind", DataType.VARCHAR, max_length=16)
    schema.add_field("conversation_id", DataType.VARCHAR, max_length=64)
    text_params = {"enable_analyzer": True} if layout.bm25 else {}
    schema.add_field("text", DataType.VARCHAR, max_length=65535, **text_params)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=layout.dim)
    index = client.prepare_index_params()
    # Lite builds IVF_FLAT in about 2 s at 100k rows (HNSW takes minutes on 2 cores).
    index.add_index(
        "dense",
        index_type="IVF_FLAT" if is_lite else "AUTOINDEX",
        metric_type="COSINE",
        params={"nlist": 128} if is_lite else {},
    )
    if layout.bm25:
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["text"],
                output_field_names=["sparse"],
            )
        )
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    return schema, index


def existing_layout(
    client: MilvusClient, name: str, dim: int, features: ServerFeatures
) -> Layout | None:
    """The layout of the existing collection ``name``, or None when it was an empty,
    half-made leftover (dropped here, to be made again). Raises
    :class:`CollectionUnusable` for one that cannot be used as it is."""
    fields = {f["name"]: f for f in client.describe_collection(name)["fields"]}
    missing = [f for f in (*CHUNK_FIELDS, "dense") if f not in fields]
    if missing:
        raise CollectionUnusable(
            f"the Milvus collection {name!r} lacks the fields {', '.join(missing)}: it was not "
            "made by convrag; set MILVUS_COLLECTION to another name"
        )
    have = int(fields["dense"]["params"].get("dim", dim))
    if have != dim:
        raise CollectionUnusable(
            f"collection {name!r} holds {have}-d vectors but the embedding model gives "
            f"{dim}-d; use another MILVUS_COLLECTION or re-ingest into a fresh data directory"
        )
    layout = Layout(dim, bm25="sparse" in fields)
    unindexed = [
        f for f in ("dense", *(["sparse"] if layout.bm25 else [])) if not _indexed(client, name, f)
    ]
    if not unindexed:
        return layout
    if _rows(client, name) == 0:
        log.warning(
            "the Milvus collection %r has no index on %s and no rows: the leftover of a "
            "start that failed; dropped and made again",
            name,
            ", ".join(unindexed),
        )
        client.drop_collection(name)
        return None
    lacking = ""
    if layout.bm25 and not features.has(SPARSE_MIN):
        lacking = (
            f" (Milvus {features.version} cannot index a sparse field: that needs "
            f">= {named(SPARSE_MIN)})"
        )
    raise CollectionUnusable(
        f"the Milvus collection {name!r} holds rows but has no index on "
        f"{', '.join(unindexed)}{lacking}: it was left half-made and is not loaded (loading "
        "it can crash the server); index it, or set MILVUS_COLLECTION to another name and "
        "ingest again"
    )


def _indexed(client: MilvusClient, name: str, field: str) -> bool:
    return bool(client.list_indexes(name, field_name=field))


def _rows(client: MilvusClient, name: str) -> int:
    """The collection's rows, as the server counts them without loading it: flushed
    first, as its count leaves out rows still in memory."""
    client.flush(name)
    return int(client.get_collection_stats(name).get("row_count", 0))
