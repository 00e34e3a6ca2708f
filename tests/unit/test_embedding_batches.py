"""BatchingEmbedder: concurrent callers' texts share one model call, each gets its rows."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from convrag.embeddings import BatchingEmbedder, Matrix


class SlowModel:
    """A stand-in model: a text's row is its length; each call waits until released."""

    name, dim = "slow", 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.callers: list[str] = []
        self.release = threading.Event()
        self.started = threading.Event()

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.calls.append(list(texts))
        self.callers.append(threading.current_thread().name)
        self.started.set()
        self.release.wait(5)
        if "boom" in texts:
            raise RuntimeError("the model failed")
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_texts_asked_while_a_batch_runs_are_embedded_together_each_caller_its_own_rows() -> None:
    model = SlowModel()
    batching = BatchingEmbedder(model)
    with ThreadPoolExecutor(4, thread_name_prefix="caller") as pool:
        first = pool.submit(batching.embed, ["a"])
        assert model.started.wait(5)  # the first call runs alone, at once
        later = [pool.submit(batching.embed, [t]) for t in ("bb", "ccc")]
        while sum(len(r.texts) for r in batching._queue) < 2:
            threading.Event().wait(0.01)
        model.release.set()
        assert first.result(5)[0][0] == 1
        assert [f.result(5)[0][0] for f in later] == [2, 3]
    assert model.calls == [["a"], ["bb", "ccc"]]
    # The first caller returned with its own rows; a waiting caller ran the next batch.
    assert model.callers[1] != model.callers[0]


def test_a_failed_batch_raises_in_every_caller_of_it_and_the_next_call_works() -> None:
    model = SlowModel()
    model.release.set()
    batching = BatchingEmbedder(model)
    with pytest.raises(RuntimeError, match="the model failed"):
        batching.embed(["boom"])
    assert batching.embed(["ok", "fine"]).tolist() == [[2, 1], [4, 1]]


def test_a_batch_holds_at_most_max_texts_unless_one_caller_asks_more() -> None:
    model = SlowModel()
    model.release.set()
    batching = BatchingEmbedder(model, max_texts=2)
    assert batching.embed(["a", "b", "c"]).shape == (3, 2)
    assert model.calls == [["a", "b", "c"]]
