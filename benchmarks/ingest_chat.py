"""Chat latency while a large ingest runs: does ingest starve the chat?

One process, the embedded stack, no LLM. A chat workspace holds the sample documents;
questions are asked one after another, first with nothing else running (idle), then
while ``--passages`` MTRAG ClapNQ passages are ingested into another workspace. The
figure is the ratio of the two p95s (issue bar: at most 2x), for the ingest embedding
``--mode``: ``process`` (a child process at lower CPU priority, the default) or
``thread`` (this process, the previous behaviour).

    python benchmarks/ingest_chat.py --mode process --out bench-out/ingest-chat-process.json
    python benchmarks/ingest_chat.py --mode thread  --out bench-out/ingest-chat-thread.json
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import clapnq_documents, load_questions, log, report, stats

from convrag.assistant import open_assistant
from convrag.config import Settings
from convrag.context import Context
from convrag.documents import load_path
from convrag.ingest import ingest_documents

SAMPLES = Path(__file__).resolve().parent.parent / "src" / "convrag" / "sample_docs"


async def run(mode: str, passages: int, idle_turns: int) -> dict[str, object]:
    data = Path(tempfile.mkdtemp(prefix="cv-ingest-chat-"))
    settings = Settings(data_dir=data, ingest_embedding=mode)  # type: ignore[call-arg]
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
        idle = [await turn(i) for i in range(idle_turns)]
        docs, _ = clapnq_documents(passages, passages)
        log(f"{mode}: ingesting {len(docs)} passages while asking")
        t0 = time.perf_counter()
        ingest = asyncio.get_running_loop().create_task(
            ingest_documents(bot.services, "bulk", docs)
        )
        busy: list[float] = []
        i = 0
        while not ingest.done():
            busy.append(await turn(i))
            i += 1
        await ingest
        ingest_s = time.perf_counter() - t0
    idle_s, busy_s = stats(idle), stats(busy)
    return {
        "mode": mode,
        "passages": passages,
        "ingest_s": round(ingest_s, 1),
        "passages_per_s": round(passages / ingest_s, 2),
        "chat_idle_ms": idle_s,
        "chat_during_ingest_ms": busy_s,
        "p95_ratio": round(busy_s["p95"] / idle_s["p95"], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["process", "thread"], default="process")
    parser.add_argument("--passages", type=int, default=400)
    parser.add_argument("--idle-turns", type=int, default=30)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report(asyncio.run(run(args.mode, args.passages, args.idle_turns)), args.out)


if __name__ == "__main__":
    main()
