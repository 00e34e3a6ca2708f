"""Ingest beside chat: does ingest starve the chat, and does the chat starve ingest?

One process, the embedded stack, no LLM. A chat workspace holds the sample documents.
``--streams`` conversations ask questions at once, one after another each: first with
nothing else running (idle), then while ``--passages`` MTRAG ClapNQ passages are ingested
into another workspace. The same passages are also ingested alone, into a third one.
Figures (issue 32's bars): the chat's p95 during the ingest over its idle p95 (at most
2x), and the ingest's rate beside the chat over its rate alone (at least 0.5), for the
ingest embedding ``--mode``: ``process`` (a child process ``--nice`` below the service's
CPU priority, by default ``INGEST_NICE``'s default) or ``thread`` (this process).

    python benchmarks/ingest_chat.py --streams 8 --out bench-out/ingest-chat-8.json
    python benchmarks/ingest_chat.py --streams 8 --nice 19 --out bench-out/ingest-chat-19.json

``--hogs N`` also ingests them beside N busy processes at the service's priority (other
load on the machine, which the ingest child's old idle priority starved it behind).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Literal, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import clapnq_documents, load_questions, log, report, stats

from convrag.assistant import open_assistant
from convrag.config import Settings
from convrag.context import Context
from convrag.documents.base import SourceDocument
from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.services import Services

Mode = Literal["process", "thread"]
SAMPLES = Path(__file__).resolve().parent.parent / "src" / "convrag" / "sample_docs"


async def _streams(
    turn: Callable[[int], Awaitable[float]], streams: int, until: Callable[[int], bool]
) -> list[float]:
    """Latencies (ms) of ``streams`` conversations asking one question after another
    until ``until(turns so far)``."""
    out: list[float] = []

    async def stream(k: int) -> None:
        i = k
        while not until(len(out)):
            out.append(await turn(i))
            i += streams

    await asyncio.gather(*(stream(k) for k in range(streams)))
    return out


def _spin() -> None:
    while True:
        pass


async def _beside_hogs(services: Services, docs: list[SourceDocument], hogs: int) -> float:
    """Chunks per second of ingesting ``docs`` while ``hogs`` processes (at the service's
    priority) keep a core busy each: other load on the machine, which idle priority
    starved the ingest behind."""
    procs = [multiprocessing.get_context("spawn").Process(target=_spin) for _ in range(hogs)]
    for p in procs:
        p.start()
    try:
        return await _ingest(services, "hogs", docs)
    finally:
        for p in procs:
            p.terminate()
            p.join()


async def _ingest(services: Services, workspace: str, docs: list[SourceDocument]) -> float:
    """Chunks per second of ingesting ``docs`` into ``workspace``."""
    t0 = time.perf_counter()
    done = await ingest_documents(services, workspace, docs)
    return done.chunks_written / (time.perf_counter() - t0)


async def run(
    mode: Mode,
    passages: int,
    idle_turns: int,
    streams: int,
    nice: int,
    hogs: int,
    data: Path | None = None,
) -> dict[str, object]:
    """The figures above, on the embedded stack under ``data`` (default: a new temporary
    directory)."""
    data = data or Path(tempfile.mkdtemp(prefix="cv-ingest-chat-"))
    settings = Settings(data_dir=data, ingest_embedding=mode, ingest_nice=nice)
    questions = load_questions()
    async with open_assistant(settings) as bot:
        chat = "chat"
        for path in sorted(SAMPLES.iterdir()):
            await ingest_documents(bot.services, chat, load_path(path, max_bytes=10**7))
        ctx = Context(workspace_id=chat, llm_model="none")

        async def turn(i: int) -> float:
            conv = await bot.new_conversation(chat)
            t0 = time.perf_counter()
            await bot.ask(questions[i % len(questions)], conv, workspace_id=chat, context=ctx)
            return (time.perf_counter() - t0) * 1000

        for i in range(3):  # warm the engines and the child
            await turn(i)
        await bot.services.bulk.embed(["warm up"])
        idle = await _streams(turn, streams, lambda n: n >= idle_turns)
        docs, _ = clapnq_documents(passages, passages)
        log(f"{mode}, nice {nice}: ingesting {len(docs)} passages alone")
        alone = await _ingest(bot.services, "alone", docs)
        log(f"{mode}, nice {nice}: ingesting them beside {streams} chat streams")
        ingest = asyncio.get_running_loop().create_task(_ingest(bot.services, "beside", docs))
        busy = await _streams(turn, streams, lambda _: ingest.done())
        beside = await ingest
        hogged = await _beside_hogs(bot.services, docs, hogs) if hogs else None
    idle_s, busy_s = stats(idle), stats(busy)
    return {
        "mode": mode,
        "ingest_nice": nice,
        "streams": streams,
        "passages": passages,
        "ingest_chunks_per_s_alone": round(alone, 2),
        "ingest_chunks_per_s_beside_chat": round(beside, 2),
        "ingest_rate_ratio": round(beside / alone, 2),
        "hogs": hogs,
        "ingest_chunks_per_s_beside_hogs": None if hogged is None else round(hogged, 2),
        "chat_idle_ms": idle_s,
        "chat_during_ingest_ms": busy_s,
        "p95_ratio": round(busy_s["p95"] / idle_s["p95"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["process", "thread"], default="process")
    parser.add_argument("--passages", type=int, default=400)
    parser.add_argument("--idle-turns", type=int, default=40)
    parser.add_argument("--streams", type=int, default=8, help="chat conversations at once")
    parser.add_argument(
        "--nice", type=int, default=Settings().ingest_nice, help="INGEST_NICE (0-19)"
    )
    parser.add_argument(
        "--hogs", type=int, default=0, help="also ingest beside this many busy processes"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = run(
        cast(Mode, args.mode), args.passages, args.idle_turns, args.streams, args.nice, args.hogs
    )
    report(asyncio.run(result), args.out)


if __name__ == "__main__":
    main()
