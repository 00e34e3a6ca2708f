"""Running a command's operation (:data:`convrag.admin.OPERATIONS`): in the service that
runs on the data directory when there is one (it answers at once, its stores open),
else in this process on the stores the operation needs, started for it.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from convrag.admin import OPERATIONS, Needs, Opened, Result
from convrag.cli.base import check_store, fail, run_command
from convrag.config import Settings, get_settings
from convrag.service_record import ServiceRecord, fingerprint, live_record

if TYPE_CHECKING:
    from convrag.stores.database import Database

#: Seconds to wait for a running service to take the connection: a local one takes it
#: at once; one that does not is starting, stopping or stuck, and the command runs here.
CONNECT_TIMEOUT_S = 2.0


def operate(name: str, **params: Any) -> Result:
    """Run the operation ``name`` with ``params`` on the data directory's stores: in its
    running service when there is one, else here. A request the operation refuses exits
    2 naming the problem, wherever it ran."""
    settings = get_settings()
    operation = OPERATIONS[name]
    try:
        request = operation.request.model_validate(params)
    except ValidationError as exc:
        problems = exc.errors(include_url=False)
        raise fail("; ".join(f"{e['loc'][0]}: {e['msg']}" for e in problems)) from None
    check_store(settings)
    record = live_record(settings.data_dir)
    if record is not None and record.settings == fingerprint(settings):
        answer = _ask_service(record, name, request.model_dump(), settings)
        if answer is not None:
            return answer

    from convrag.cli.starting import starting_here

    first = (
        f"no convrag service is running on {settings.data_dir}: starting its stores in this "
        "process (`convrag serve` keeps them running, and answers at once) ..."
    )
    with starting_here(settings, vectors=operation.needs != "database", first=first) as waiting:

        async def here() -> Result:
            async with opened_for(operation.needs, settings, say=waiting.say) as opened:
                waiting.done()
                return await operation.run(opened, request)

        return run_command(here, checked=True)


def _ask_service(
    record: ServiceRecord, name: str, body: dict[str, Any], settings: Settings
) -> Result | None:
    """The service's answer, or None when it does not take the request (not listening
    yet or any more, or not the service the record names): the command then runs here.

    The standard library's client: an HTTP library's import would cost the command more
    than the service takes to answer."""
    import http.client
    import json
    from urllib.parse import urlsplit

    url = urlsplit(record.url)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, CONNECT_TIMEOUT_S)
    try:
        conn.connect()
    except OSError:
        return None
    conn.sock.settimeout(settings.llm_timeout_s + 120)  # an answer may wait on the LLM
    headers = {"Authorization": f"Bearer {record.token}", "Content-Type": "application/json"}
    with contextlib.closing(conn):
        conn.request("POST", f"/admin/v1/{name}", json.dumps(body), headers)
        reply = conn.getresponse()
        status, text = reply.status, reply.read().decode(errors="replace")
    if status in (401, 404):
        return None
    if status == 422:
        raise fail(_detail(text))
    if status >= 400:
        raise fail(f"the service at {record.url} answered {status}: {_detail(text)}", 1)
    answer: Result = json.loads(text)
    return answer


def _detail(text: str) -> str:
    """The ``detail`` of an error reply, else its start."""
    import json

    try:
        return str(json.loads(text)["detail"])
    except (ValueError, KeyError, TypeError):
        return text[:500]


@asynccontextmanager
async def opened_for(
    needs: Needs, settings: Settings, *, say: Callable[[str], None] | None = None
) -> AsyncIterator[Opened]:
    """The stores an operation needs, started (or joined) for it and closed after;
    ``say`` is told each slow step as it begins."""
    if needs == "database":
        async with open_database(settings, say=say) as db:
            yield Opened(db)
        return
    from convrag.assistant import open_assistant
    from convrag.services import open_services

    async with open_services(settings, say=say) as services:
        if needs == "services":
            yield Opened(services.db, services)
        else:
            async with open_assistant(services=services) as bot:
                yield Opened(services.db, services, bot)


@asynccontextmanager
async def open_database(
    settings: Settings, *, say: Callable[[str], None] | None = None
) -> AsyncIterator[Database]:
    """PostgreSQL alone (the embedded one started, or joined, when no URL is set), its
    tables set up: what the key and document list commands need, without Milvus or the
    embedder. ``say`` is told when the embedded one starts."""
    import asyncio

    from convrag.stores.base import SETUP_LOCK
    from convrag.stores.database import Database
    from convrag.stores.embedded import EmbeddedPostgres

    async with AsyncExitStack() as stack:
        if settings.database_url is not None:
            url = settings.database_url.get_secret_value()
        else:
            await asyncio.to_thread(settings.data_dir.mkdir, parents=True, exist_ok=True)
            if say is not None:
                say(
                    f"starting the embedded database (PostgreSQL in {settings.data_dir / 'pg'}) ..."
                )
            url = await stack.enter_async_context(EmbeddedPostgres.running(settings.data_dir))
        db = await stack.enter_async_context(Database.from_url(url, max_size=2))
        async with db.exclusive(SETUP_LOCK):
            await db.setup()
        yield db
