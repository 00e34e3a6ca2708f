"""Rows and bytes a turn leaves behind, per table, and what checkpoint pruning keeps.

One process, the embedded stack, no LLM, a fresh data directory. The sample documents
are ingested into one workspace; then ``--conversations`` conversations of the
:data:`CONVERSATION` about them (five turns: questions and follow-ups, each answered with
citations) are asked through ``Assistant.ask`` (which prunes each thread's checkpoints
after its turn, as the HTTP service does). The figures are the rows
and the bytes of their live rows (``pg_column_size``, compressed as stored; indexes and
space not yet vacuumed are left out) of each table that grows with conversations,
divided by the number of turns. A second pass asks the same
turns with pruning switched off, for the size checkpoints would reach without it.

    python benchmarks/storage_per_turn.py --out bench-out/storage-per-turn.json
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_common import log, report

from convrag.assistant import Assistant, open_assistant
from convrag.config import Settings
from convrag.context import Context
from convrag.documents.load import load_path
from convrag.ingest import ingest_documents

SAMPLES = Path(__file__).resolve().parent.parent / "src" / "convrag" / "sample_docs"

TABLES = (
    "conversations",
    "conversation_turns",
    "message_citations",
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
)
"""The tables that grow with conversations (documents and chunks grow with ingest)."""

CONVERSATION = [
    "What is Prasad Chaudhari's salary?",
    "What about her basic salary?",
    "How many days of paid annual leave does an employee get?",
    "And how is sick leave paid?",
    "How do volcanic eruptions begin?",
]
"""Questions about the sample documents, as a user of the README would ask them."""

Sizes = dict[str, dict[str, int]]
"""Rows and bytes per table."""


async def table_sizes(bot: Assistant) -> Sizes:
    out: Sizes = {}
    async with bot.services.db.pool.connection() as conn:
        for table in TABLES:
            row = await (
                await conn.execute(
                    f"SELECT count(*) AS n, coalesce(sum(pg_column_size(t.*)), 0) AS b "
                    f"FROM {table} t"
                )
            ).fetchone()
            assert row is not None
            out[table] = {"rows": int(row["n"]), "bytes": int(row["b"])}
    return out


async def ask_all(bot: Assistant, workspace: str, convs: list[list[str]]) -> int:
    ctx = Context(workspace_id=workspace, llm_model="none")
    turns = 0
    for questions in convs:
        conv = await bot.new_conversation(workspace)
        for q in questions:
            await bot.ask(q, conv, workspace_id=workspace, context=ctx)
            turns += 1
    return turns


def per_turn(before: Sizes, after: Sizes, turns: int) -> dict[str, Any]:
    return {
        t: {
            "rows_per_turn": round((after[t]["rows"] - before[t]["rows"]) / turns, 2),
            "bytes_per_turn": round((after[t]["bytes"] - before[t]["bytes"]) / turns),
            "rows": after[t]["rows"],
        }
        for t in TABLES
    }


async def run(conversations: int) -> dict[str, Any]:
    data = Path(tempfile.mkdtemp(prefix="cv-storage-"))
    try:
        convs = [CONVERSATION] * conversations
        async with open_assistant(Settings(data_dir=data)) as bot:
            for path in sorted(SAMPLES.iterdir()):
                await ingest_documents(bot.services, "store", load_path(path, max_bytes=10**7))
            start = await table_sizes(bot)
            log(f"pruned: {sum(len(c) for c in convs)} turns")
            n = await ask_all(bot, "store", convs)
            pruned = await table_sizes(bot)

            async def keep_everything(_: str) -> None:
                return None

            bot.settle = keep_everything  # type: ignore[method-assign]
            log(f"unpruned: {n} more turns")
            n2 = await ask_all(bot, "store", convs)
            unpruned = await table_sizes(bot)
        return {
            "turns": n,
            "conversations": len(convs),
            "pruned_after_each_turn": per_turn(start, pruned, n),
            "not_pruned": per_turn(pruned, unpruned, n2),
            "checkpoints_per_conversation_at_rest": round(
                (pruned["checkpoints"]["rows"] - start["checkpoints"]["rows"]) / len(convs), 2
            ),
        }
    finally:
        shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=20)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    report(asyncio.run(run(args.conversations)), args.out)


if __name__ == "__main__":
    main()
