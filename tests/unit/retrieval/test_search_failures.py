"""A search whose dense or keyword list fails goes on with the other, saying why."""

from __future__ import annotations

import pytest

from convrag.retrieval.search import _ranked_lists
from convrag.stores.vectors import Hit

FOUND = [Hit("c1", "d1", "text", 1.0)]


async def _found() -> list[Hit]:
    return FOUND


async def _down() -> list[Hit]:
    raise ConnectionError("the vector index is down")


async def test_a_failed_list_is_left_empty_and_named_when_the_caller_takes_failures() -> None:
    failures: list[str] = []
    assert await _ranked_lists("hybrid", _down, _found, failures) == [[], FOUND]
    assert failures == ["dense: error: ConnectionError"]
    assert await _ranked_lists("hybrid", _found, _down, failures) == [FOUND, []]
    assert failures[-1] == "keyword: error: ConnectionError"


async def test_both_lists_failing_or_a_caller_without_failures_raises() -> None:
    with pytest.raises(ConnectionError):
        await _ranked_lists("hybrid", _down, _down, [])
    with pytest.raises(ConnectionError):
        await _ranked_lists("hybrid", _down, _found)
