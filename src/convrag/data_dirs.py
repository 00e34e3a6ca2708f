"""Where the data directory is when ``CONVRAG_DATA_DIR`` is unset, found the same way from
any directory, and the stores this user has used (to name them when none is found).

The order: ``CONVRAG_DATA_DIR`` (the environment or ``.env``, read by the settings), then
the nearest ``.convrag`` holding a store in the current directory or one of its parents
(a repository's, from anywhere inside it), then the per-user directory
(``$XDG_DATA_HOME/convrag``, by default ``~/.local/share/convrag``).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The name of a data directory kept beside a project (``scripts/run.sh`` keeps the
#: repository's there).
LOCAL_NAME = ".convrag"

#: The most stores :func:`remember_store` keeps.
MAX_REMEMBERED = 10


def user_data_dir() -> Path:
    """The per-user data directory: ``$XDG_DATA_HOME/convrag`` (``~/.local/share/convrag``)."""
    base = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return (Path(base).expanduser() / "convrag").resolve()


def holds_store(path: Path) -> bool:
    """Whether ``path`` holds an embedded store (PostgreSQL's or Milvus Lite's data)."""
    return (path / "pg").is_dir() or (path / "milvus").is_dir()


def find_data_dir(cwd: Path | None = None) -> Path:
    """The data directory when ``CONVRAG_DATA_DIR`` is unset: the nearest ``.convrag``
    holding a store in ``cwd`` (the current directory) or a parent of it, else the
    per-user one, whether or not it holds a store yet."""
    start = (cwd or Path.cwd()).resolve()
    for directory in (start, *start.parents):
        if holds_store(directory / LOCAL_NAME):
            return directory / LOCAL_NAME
    return user_data_dir()


def _registry() -> Path:
    base = os.environ.get("XDG_STATE_HOME", "").strip() or "~/.local/state"
    return Path(base).expanduser() / "convrag" / "stores"


def known_stores() -> list[Path]:
    """The data directories this user's commands and services have used, latest first,
    that still hold a store and belong to this user (another user's, used once, is
    theirs to name)."""
    try:
        lines = _registry().read_text().splitlines()
    except OSError:
        return []
    used = dict.fromkeys(Path(line) for line in lines if line)
    return [p for p in used if holds_store(p) and owned(p)]


def owned(path: Path) -> bool:
    """Whether ``path`` exists and belongs to the user running this process."""
    try:
        return path.stat().st_uid == os.getuid()
    except OSError:
        return False


def remember_store(path: Path) -> None:
    """Record ``path`` as a store this user uses (first in :func:`known_stores`), so that
    a command that finds none can say where one is. Best effort: a home that cannot be
    written only loses the hint."""
    known = known_stores()
    if known[:1] == [path]:
        return
    kept = [path, *(p for p in known if p != path)][:MAX_REMEMBERED]
    registry = _registry()
    try:
        registry.parent.mkdir(parents=True, exist_ok=True)
        tmp = registry.with_name(f".stores-{os.getpid()}")
        tmp.write_text("".join(f"{p}\n" for p in kept))
        tmp.replace(registry)
    except OSError:
        pass
