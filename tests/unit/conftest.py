"""The fast tier: every test here runs in the test process alone, with no process of its
own and no server (no embedded stack, no subprocess, no listening socket, no browser).

``pytest tests/unit`` runs it in well under a minute on two cores. The rule is enforced,
not inferred: while a module here runs, starting a process or binding a socket raises
:class:`TierError`, and the embedded stack's fixtures fail at once. A test that needs
either belongs beside ``tests/unit/``, in the same sub-directory under ``tests/``.
"""

from __future__ import annotations

import asyncio
import multiprocessing.util
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest

from convrag.config import Settings


class TierError(RuntimeError):
    """A test under ``tests/unit/`` started a process or opened a server."""


def _refuse(what: str, where: str) -> NoReturn:
    raise TierError(
        f"{where} {what}: tests/unit/ is the fast tier, with no process of its own and no "
        "server; this test belongs outside tests/unit/ (the same sub-directory under tests/)"
    )


@pytest.fixture(scope="module", autouse=True)
def no_process_no_server(request: pytest.FixtureRequest) -> Iterator[None]:
    """For the module's fixtures and tests: every way to start a process (subprocess,
    asyncio, multiprocessing, a fork or spawn) and to serve (bind, listen) raises."""
    where = request.node.nodeid

    def refusing(what: str) -> Any:
        def refuse(*args: Any, **kwargs: Any) -> NoReturn:
            _refuse(what, where)

        return refuse

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess.Popen, "__init__", refusing("started a subprocess"))
        patch.setattr(asyncio, "create_subprocess_exec", refusing("started a subprocess"))
        patch.setattr(asyncio, "create_subprocess_shell", refusing("started a subprocess"))
        patch.setattr(multiprocessing.util, "spawnv_passfds", refusing("spawned a process"))
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
            if hasattr(os, name):
                patch.setattr(os, name, refusing(f"called os.{name}"))
        patch.setattr(socket.socket, "bind", refusing("bound a socket (a server)"))
        patch.setattr(socket.socket, "listen", refusing("listened on a socket (a server)"))
        yield


@pytest.fixture(scope="session")
def data_dir() -> NoReturn:
    _refuse("asked for the embedded stack's data directory", "a test")


@pytest.fixture(scope="session")
def services() -> NoReturn:
    _refuse("asked for the embedded stack (services)", "a test")


@pytest.fixture(scope="session")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """The defaults, on a data directory that nothing here starts a store in."""
    data: Path = tmp_path_factory.mktemp("data")
    return Settings(data_dir=data)
