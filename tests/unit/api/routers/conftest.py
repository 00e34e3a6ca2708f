"""The routers' unit tests: the real app over in-memory fakes (``tests/api/fakes.py``),
in-process. No embedded server, no process: every test here is in the fast tier
(``pytest tests/unit``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.api.fakes import FakeStack, client, fake_app, fake_stack


@pytest.fixture
def stack(tmp_path: Path) -> FakeStack:
    """The fakes the app serves with, to seed and inspect."""
    return fake_stack(tmp_path)


@pytest.fixture
async def api(stack: FakeStack) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the real app serving :func:`stack`."""
    async with client(fake_app(stack)) as c:
        yield c


@pytest.fixture
async def auth(stack: FakeStack) -> dict[str, str]:
    """The ``Authorization`` header of a key of workspace ``acme``."""
    return await stack.key("acme")
