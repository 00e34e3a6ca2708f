"""The Postgres checkpointer: ``AsyncPostgresSaver`` on the same database (and pool).

Durability: turns run with ``durability="exit"`` by default. LangGraph then writes one
checkpoint when the run ends, including when a node raises, so a run that crashed inside
``synthesize`` resumes from there (``ainvoke(None, config)``) and persist, keyed by the
turn id fixed in ``load_history``, never writes the turn twice. ``"async"`` writes one
checkpoint per superstep (about 8 ms each on this machine, ten supersteps a turn) and
only adds protection against a killed process, which a client retry covers.
"""

from __future__ import annotations

from typing import Literal

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from convrag.stores.database import Database

Durability = Literal["exit", "async", "sync"]
DEFAULT_DURABILITY: Durability = "exit"


async def saver_for(db: Database) -> AsyncPostgresSaver:
    """A saver sharing ``db``'s pool; runs its idempotent ``setup()``."""
    saver = AsyncPostgresSaver(db.pool)
    await saver.setup()
    return saver
