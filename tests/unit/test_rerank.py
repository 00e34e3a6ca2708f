"""The reranker setting's accepted forms."""

from __future__ import annotations

import pytest

from convrag.rerank import endpoint


def test_the_reranker_setting_names_its_accepted_forms() -> None:
    assert endpoint("none") is None
    assert endpoint("http:http://tei:8080") == "http://tei:8080/rerank"
    assert endpoint("http:https://api.jina.ai/v1/rerank") == "https://api.jina.ai/v1/rerank"
    with pytest.raises(ValueError, match="'none' or 'http:<url"):
        endpoint("local:bge")
