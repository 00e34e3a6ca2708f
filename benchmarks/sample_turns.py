"""No-LLM turns on the sample documents, timed in process: median ms per question.

    python benchmarks/sample_turns.py DATA_DIR

Runs 8 conversations of 4 turns (the first conversation warms up and is dropped). Run it
from two checkouts (PYTHONPATH=<checkout>/src) to compare code versions back to back.
"""

import asyncio
import statistics
import sys
import time
from pathlib import Path

from convrag.assistant import open_assistant
from convrag.config import Settings

try:
    from convrag.context import Context
except ImportError:
    from convrag.graph.context import Context


async def main():
    async with open_assistant(Settings(data_dir=Path(sys.argv[1]))) as bot:
        ws = "demo-t"
        from convrag.documents.load import expand_paths, load_path
        from convrag.ingest import ingest_documents

        for f in expand_paths([Path(__file__).resolve().parents[1] / "src/convrag/sample_docs"]):
            await ingest_documents(bot.services, ws, load_path(f, max_bytes=10**6))
        ctx = Context(workspace_id=ws, llm_model="none")
        qs = [
            "What is Prasad Chaudhari's salary?",
            "What about her basic salary?",
            "How many days of annual leave do I get?",
            "And sick leave?",
        ]
        times = {q: [] for q in qs}
        for i in range(8):
            c = await bot.new_conversation(ws)
            for q in qs:
                t = time.perf_counter()
                await bot.ask(q, c, workspace_id=ws, context=ctx)
                if i:
                    times[q].append((time.perf_counter() - t) * 1000)
        for q, v in times.items():
            print(round(statistics.median(v), 1), q)


asyncio.run(main())
