"""What a Milvus server's version says it supports, and the error naming what it lacks."""

from __future__ import annotations

import pytest

from convrag.stores.milvus_schema import (
    BM25_MIN,
    MILVUS_MIN,
    MilvusUnsupported,
    ServerFeatures,
)


@pytest.mark.parametrize(
    ("version", "bm25", "upsert"),
    [
        ("v2.3.5-lite", False, False),
        ("v2.4.17", False, True),
        ("v2.5.4", True, True),
        ("2.6.0", True, True),
        ("Zilliz Cloud Vector Database(Compatible with Milvus 2.5)", True, True),
        ("milvus_lite-3.2.2", True, True),
    ],
)
def test_a_servers_version_says_whether_it_has_bm25_and_a_partition_key_upsert(
    version: str, bm25: bool, upsert: bool
) -> None:
    features = ServerFeatures.of(version)
    assert (features.bm25, features.upsert) == (bm25, upsert)


def test_a_feature_the_server_lacks_is_one_error_naming_the_minimum_version() -> None:
    features = ServerFeatures.of("v2.3.5-lite")
    features.require(MILVUS_MIN, "convrag")
    with pytest.raises(MilvusUnsupported) as refused:
        features.require(BM25_MIN, "KEYWORD_ENGINE=milvus", "set KEYWORD_ENGINE=bm25s")
    assert str(refused.value) == (
        "KEYWORD_ENGINE=milvus needs Milvus >= 2.5; the server at MILVUS_URI is v2.3.5-lite; "
        "set KEYWORD_ENGINE=bm25s"
    )
    assert isinstance(refused.value, ValueError)  # a command exits 2 with the message alone


def test_a_version_that_names_no_release_is_taken_as_current() -> None:
    assert ServerFeatures.of("unknown").bm25
