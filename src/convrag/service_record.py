"""The record a running ``convrag serve`` keeps in its data directory, so that the
command line talks to it instead of starting the stores itself.

``<data_dir>/service.json`` (mode 600) holds the serving process's pid, the URL the
command line reaches it at, and a random token made at each start that opens the
service's ``/admin/v1`` operations (:mod:`convrag.api.routers.admin`): only a user who
can read the data directory's files holds it, and they can read the stores anyway. The
service removes the record as it stops; one left by a killed process (its pid gone) is
removed by the next command that reads it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import SecretStr

from convrag.config import Settings
from convrag.stores.embedded import pid_alive

#: The record's name in the data directory.
RECORD_NAME = "service.json"

#: The log of ``convrag serve --detach``, in the data directory.
LOG_NAME = "serve.log"


@dataclass(frozen=True, slots=True)
class ServiceRecord:
    """A running service, as its record names it."""

    pid: int
    url: str
    token: str
    settings: str
    """The :func:`fingerprint` of the settings the service runs with: a command whose own
    settings differ (another DATABASE_URL, another LLM) runs itself instead."""

    @classmethod
    def new(cls, host: str, port: int, settings: Settings) -> ServiceRecord:
        """The record of this process serving on ``host:port``, with a new token."""
        url = f"http://{local_host(host)}:{port}"
        return cls(os.getpid(), url, secrets.token_urlsafe(32), fingerprint(settings))


def fingerprint(settings: Settings) -> str:
    """A digest of every setting's value (secrets included, which it does not reveal)."""
    values = {
        name: value.get_secret_value() if isinstance(value, SecretStr) else value
        for name, value in settings
    }
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()


def local_host(host: str) -> str:
    """The address this machine reaches a service bound to ``host`` at: loopback for a
    wildcard bind, an IPv6 address in brackets."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def read_record(data_dir: Path) -> ServiceRecord | None:
    """The record in ``data_dir``, or None when there is none (or it does not parse)."""
    try:
        data = json.loads((data_dir / RECORD_NAME).read_text())
        return ServiceRecord(
            int(data["pid"]), str(data["url"]), str(data["token"]), str(data["settings"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_convrag(pid: int) -> bool:
    """Whether ``pid`` runs and is a convrag process (on Linux, its command line names
    convrag; elsewhere, whether it runs): a pid a killed service left may be reused."""
    try:
        return b"convrag" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return pid_alive(pid) and not Path("/proc/self").exists()
    except OSError:
        return pid_alive(pid)


def live_record(data_dir: Path) -> ServiceRecord | None:
    """The record of a service whose process still runs; a record whose process is gone
    is removed (a killed service leaves its record behind)."""
    record = read_record(data_dir)
    if record is None:
        return None
    if not is_convrag(record.pid):
        remove_record(data_dir, record.pid)
        return None
    return record


def write_record(data_dir: Path, record: ServiceRecord) -> None:
    """Write ``record`` readable by its owner alone, replacing any other at once. The
    data directory is made first: a service on server stores (``DATABASE_URL``,
    ``MILVUS_URI``) may start on one that does not exist yet."""
    data_dir.mkdir(parents=True, exist_ok=True)
    tmp = data_dir / f".{RECORD_NAME}.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)
        json.dump(asdict(record), fh)
    tmp.replace(data_dir / RECORD_NAME)


def remove_record(data_dir: Path, pid: int) -> None:
    """Remove the record if it is still that of ``pid`` (another service may have
    replaced it since)."""
    record = read_record(data_dir)
    if record is not None and record.pid == pid:
        (data_dir / RECORD_NAME).unlink(missing_ok=True)


@contextmanager
def recorded(data_dir: Path, record: ServiceRecord) -> Iterator[None]:
    """Keep ``record`` in ``data_dir`` while the block runs."""
    write_record(data_dir, record)
    try:
        yield
    finally:
        remove_record(data_dir, record.pid)
