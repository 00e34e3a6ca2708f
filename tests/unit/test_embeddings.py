"""Embedders in the test process: the bundled ONNX model, lanes, remembered rows and
batch cuts."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence

import numpy as np
import pytest

from convrag.children import give_back_freed, large_blocks_from_kernel
from convrag.config import Settings
from convrag.embeddings import (
    Matrix,
    OnnxMiniLM,
    RememberingEmbedder,
    RoundRobin,
    cheapest_cuts,
    get_embedder,
)


def test_the_bundled_model_gives_normalised_384_d_vectors_in_input_order() -> None:
    model = OnnxMiniLM(batch_size=2)
    texts = ["a much longer sentence about the basic salary of an engineer", "salary", "hi"]
    rows = model.embed(texts)
    assert rows.shape == (3, 384)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert np.allclose(rows[1], model.embed(["salary"])[0], atol=1e-5)
    assert float(rows[0] @ rows[1]) > float(rows[0] @ rows[2])


def test_ingest_threads_default_to_every_core_and_must_be_positive() -> None:
    from convrag.config import Settings
    from convrag.embeddings import LOCAL_MODEL, ProcessEmbedder

    assert Settings().effective_ingest_threads == len(os.sched_getaffinity(0))
    assert Settings(ingest_threads=1).effective_ingest_threads == 1
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        Settings(ingest_threads=0)
    with pytest.raises(ValueError, match="ingest threads must be >= 1"):
        ProcessEmbedder(LOCAL_MODEL, 64, threads=0)


async def _take_turns(turns: RoundRobin, callers: Sequence[tuple[str, str]]) -> list[str]:
    """The order in which ``callers`` ``(lane, name)`` got their turn, all asking while
    a first caller of lane "held" holds the one turn."""
    order: list[str] = []
    release = asyncio.Event()

    async def hold() -> None:
        async with turns.turn("held"):
            await release.wait()

    async def take(lane: str, name: str) -> None:
        async with turns.turn(lane):
            order.append(name)
            await asyncio.sleep(0)

    holder = asyncio.ensure_future(hold())
    await asyncio.sleep(0)
    tasks = []
    for lane, name in callers:
        tasks.append(asyncio.ensure_future(take(lane, name)))
        await asyncio.sleep(0)  # queued in this order
    release.set()
    await asyncio.gather(holder, *tasks)
    return order


async def test_turns_alternate_between_lanes_whatever_order_their_callers_queued_in() -> None:
    """One workspace's large upload queues slice after slice; another workspace's upload
    gets every other turn instead of waiting behind them all."""
    order = await _take_turns(
        RoundRobin(), [("big", "big-1"), ("big", "big-2"), ("big", "big-3"), ("small", "small")]
    )
    assert order == ["big-1", "small", "big-2", "big-3"]


async def test_a_caller_cancelled_while_it_waits_for_its_turn_passes_it_on() -> None:
    turns = RoundRobin()
    got: list[str] = []

    async def take(lane: str) -> None:
        async with turns.turn(lane):
            got.append(lane)

    async with turns.turn("a"):
        gone = asyncio.ensure_future(take("b"))
        kept = asyncio.ensure_future(take("c"))
        await asyncio.sleep(0)
        assert turns.waiting() == {"b": 1, "c": 1}
        gone.cancel()
        await asyncio.sleep(0)
        assert turns.waiting() == {"c": 1}
    await kept
    assert got == ["c"] and turns.waiting() == {}
    async with turns.turn("d"):  # the turn was given back: free at once
        pass


def test_an_unknown_local_model_names_the_models_that_ship() -> None:
    with pytest.raises(ValueError, match="'local:all-MiniLM-L6-v2-int8'"):
        get_embedder(Settings(embedding_model="local:no-such-model"))


class _Counting:
    """A two-dimensional embedder that records what it was asked to embed."""

    name = "counting"
    dim = 2

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Matrix:
        self.asked.append(list(texts))
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_remembered_rows_are_not_embedded_again_and_the_oldest_are_forgotten() -> None:
    inner = _Counting()
    remembering = RememberingEmbedder(inner, size=3)
    first = remembering.embed(["a", "bb", "a"])
    assert first.tolist() == [[1, 1], [2, 1], [1, 1]]
    again = remembering.embed(["bb", "ccc"])
    assert again.tolist() == [[2, 1], [3, 1]]
    assert inner.asked == [["a", "bb"], ["ccc"]]
    remembering.embed(["dddd"])  # four texts seen, room for three: "a" goes
    remembering.embed(["a", "bb"])
    assert inner.asked[-1] == ["a"]
    assert remembering.embed([]).shape == (0, 2)


def test_the_texts_a_turn_lacks_go_to_the_model_in_one_call_once_each() -> None:
    inner = _Counting()
    texts = [f"{'x' * n}" for n in (9, 1, 5, 9, 3)]
    rows = RememberingEmbedder(inner).embed(texts)
    assert rows[:, 0].tolist() == [9, 1, 5, 9, 3]
    assert inner.asked == [["x" * 9, "x", "x" * 5, "x" * 3]]  # the model batches by length


@pytest.mark.parametrize(
    ("lengths", "most", "ends"),
    [
        ([8, 8, 8, 8], 64, [4]),  # alike: one call
        ([4, 5, 6, 200], 64, [3, 4]),  # one long text would pad three short ones to 200
        ([8, 8, 8, 8], 3, [1, 4]),  # never more than ``most`` in a call
        ([], 64, []),
    ],
)
def test_a_batch_is_cut_where_padding_would_cost_more_than_a_call(
    lengths: list[int], most: int, ends: list[int]
) -> None:
    assert cheapest_cuts(lengths, 20, most) == ends


def test_each_row_is_the_texts_own_whatever_batch_it_was_cut_into() -> None:
    model = OnnxMiniLM(batch_size=4)
    texts = ["hi", " ".join(["a long sentence about the leave policy"] * 12), "salary?", "ok"]
    together = model.embed(texts)
    alone = np.concatenate([model.embed([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-6)


def test_the_model_runs_without_onnx_runtimes_cpu_arena() -> None:
    # The arena kept every region it grew into: over the thousand call shapes of a
    # 10 MiB upload the ingest child reached 1.9 GiB (BENCHMARKS.md, 2026-12-07 (h)).
    model = OnnxMiniLM(batch_size=2)
    assert model.session.get_session_options().enable_cpu_mem_arena is False


def test_the_ingest_child_gives_freed_memory_back_after_each_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # glibc kept a call's freed tensors in the child's heap until the next call, so the
    # child's peak was one call's tensors on top of the last one's leftovers.
    import convrag.embeddings as embeddings

    trims: list[int] = []
    monkeypatch.setattr(embeddings, "_CHILD", OnnxMiniLM(batch_size=2))
    monkeypatch.setattr(embeddings, "give_back_freed", lambda: trims.append(1))
    rows = embeddings._child_embed(["one text", "another"])
    assert rows.shape == (2, 384) and trims == [1]
    give_back_freed()  # glibc here: the real call runs


def test_the_ingest_child_takes_large_blocks_straight_from_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Left to glibc, a call's large tensors soon came from the heaps, and the child's RSS
    # grew over a 10 MiB upload past 1 GiB (BENCHMARKS.md, 2026-12-07 (v)).
    import convrag.embeddings as embeddings

    steps: list[str] = []
    monkeypatch.setattr(embeddings, "die_with_parent", lambda parent: steps.append("guard"))
    monkeypatch.setattr(embeddings.signal, "signal", lambda *args: None)
    monkeypatch.setattr(embeddings.os, "nice", lambda n: 0)
    monkeypatch.setattr(embeddings, "large_blocks_from_kernel", lambda: steps.append("mmap"))
    monkeypatch.setattr(embeddings, "_load_local", lambda *args: steps.append("model"))
    monkeypatch.setattr(embeddings, "_CHILD", None)
    embeddings._child_start("local:all-MiniLM-L6-v2-int8", 2, 0, 1, os.getpid())
    assert steps == ["guard", "mmap", "model"]  # before the model allocates anything
    large_blocks_from_kernel()  # glibc here: the real call runs


def test_a_call_holds_at_most_call_cells_texts_times_length_squared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A call's attention memory grows with its texts times its padded length squared: one
    # of 64 texts of 256 tokens peaked at 1.6 GiB (BENCHMARKS.md, 2026-12-07 (t)).
    model = OnnxMiniLM(batch_size=64)
    monkeypatch.setattr(model, "CALL_CELLS", 4 * 40 * 40)
    shapes: list[tuple[int, int]] = []
    run = model._run

    def counted(ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        shapes.append(ids.shape)
        return run(ids, mask, types)

    monkeypatch.setattr(model, "_run", counted)
    texts = [" ".join(["leave"] * 35)] * 10 + ["hi"] * 3
    rows = model.embed(texts)
    assert shapes and all(n * width * width <= 4 * 40 * 40 for n, width in shapes)
    assert np.allclose(rows, np.concatenate([model.embed([t]) for t in texts]), atol=1e-6)
