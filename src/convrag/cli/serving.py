"""Commands that run or describe the service: serve, config."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Column, Table

from convrag.cli.base import (
    app,
    check_store,
    fail,
    out,
    workspace_option,
)
from convrag.config import Settings, get_settings, setting_sources
from convrag.service_record import (
    LOG_NAME,
    ServiceRecord,
    live_record,
    read_record,
    recorded,
)

if TYPE_CHECKING:
    from convrag.services import Services


@app.command()
def config(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print the effective settings (secrets masked) and where each comes from: the
    environment, .env in this directory, the default, or derived (worked out from the
    others: effective_llm_model, effective_ingest_threads); exit 2 on one this service
    cannot use."""
    from convrag.embeddings import check_model_name
    from convrag.llm import check_llm_model

    settings = get_settings()
    try:
        check_model_name(settings.embedding_model)
        check_llm_model(settings)
    except ValueError as exc:
        raise fail(exc) from None
    data = settings.masked()
    if as_json:
        print(json.dumps(data, indent=2, default=str))
        return
    sources = setting_sources(Settings)
    # Folded, not cut with "…": a value (the data directory's path) is never shortened,
    # however narrow the terminal or a pipe's 80 columns.
    table = Table("setting", Column("value", overflow="fold"), "from")
    for k, v in data.items():
        table.add_row(k, "" if v is None else str(v), sources.get(k, "derived"))
    out.print(table)


DocsOpt = Annotated[
    Path | None,
    typer.Option(
        "--docs",
        metavar="PATH",
        help="Before serving, ingest this folder (recursively) or file into the workspace "
        "--workspace names, as `convrag ingest` does, and print that workspace's API key "
        "(kept in CONVRAG_DATA_DIR/NAME.key) and the page's URL.",
    ),
]


DocsWorkspaceOpt = Annotated[
    str | None,
    typer.Option(
        "--workspace",
        "-w",
        metavar="NAME",
        help="The workspace --docs goes into (default: the folder's or file's name "
        "without its extension, lowercased, other characters than a-z 0-9 _ - as -).",
        callback=workspace_option,
    ),
]


@app.command()
def serve(
    host: Annotated[str, typer.Option(metavar="HOST", help="Bind address.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=1, max=65535, metavar="PORT", help="Port to listen on.")
    ] = 8000,
    workers: Annotated[
        int,
        typer.Option(
            min=1,
            metavar="N",
            help="Worker processes on the one port. Above 1, this process owns the embedded "
            "PostgreSQL and Milvus Lite (those with no URL set) and the workers connect to "
            "them by URL.",
        ),
    ] = 1,
    docs: DocsOpt = None,
    workspace: DocsWorkspaceOpt = None,
    detach: Annotated[
        bool,
        typer.Option(
            "--detach",
            help="Run in the background, its log in CONVRAG_DATA_DIR/serve.log; return once "
            "it answers. `convrag stop` stops it.",
        ),
    ] = False,
) -> None:
    """Start the HTTP service (SSE + OpenAI-compatible) on the settings in force.

    With no DATABASE_URL / MILVUS_URI it starts the embedded PostgreSQL and Milvus Lite
    under CONVRAG_DATA_DIR and stops them on exit (Ctrl-C, SIGTERM or `convrag stop`).
    With --docs it first ingests your documents and prints a key for them: one step to
    chat with them. While it runs, the commands on the same data directory (documents
    list, keys, ask) ask it instead of starting the stores, and answer at once.
    """
    settings = get_settings()
    workspace = _check_serve(settings, host, port, docs, workspace)
    if detach:
        _detach(settings, host, port, workers, docs, workspace)
        return
    if docs is not None and workspace is not None:
        _ingest_docs(docs, workspace, settings)
        print(f"chat page: http://{_url_host(host)}:{port}/", flush=True)
    # Imported here, not first: --docs shows its files being read at once.
    from convrag.server import run
    from convrag.services import install_sigterm_handler

    # uvicorn raises the SIGTERM it stopped on again once stopped: as an exit, not a
    # death by the signal, so that the record is removed.
    install_sigterm_handler()
    with recorded(settings.data_dir, ServiceRecord.new(host, port, settings)):
        if workers == 1:
            run(host, port, settings)
        else:
            _serve_workers(host, port, workers, settings)


def _check_serve(
    settings: Settings, host: str, port: int, docs: Path | None, workspace: str | None
) -> str | None:
    """Exit 2 naming the problem before any store starts: an LLM that cannot be used,
    --docs naming nothing, a port in use, a data directory that cannot be written, a
    database that does not answer, or a service already running on the data directory.
    Returns the workspace --docs goes into."""
    if settings.effective_llm_model is not None:  # the chat models' import takes seconds
        from convrag.llm import check_llm_model

        try:
            check_llm_model(settings)
        except ValueError as exc:
            raise fail(exc) from None
    workspace = _docs_target(docs, workspace)
    check_store(settings)
    _check_port_free(host, port)
    running = live_record(settings.data_dir)
    if running is not None:
        raise fail(
            f"a convrag service already runs on {settings.data_dir} at {running.url} "
            f"(pid {running.pid}); `convrag stop` stops it"
        )
    if settings.database_url is None or settings.milvus_uri is None:
        _check_data_dir(settings)
    if settings.database_url is not None:
        _check_database(settings.database_url.get_secret_value())
    if settings.milvus_uri is not None and not settings.is_milvus_lite:
        _check_milvus(settings)
    return workspace


#: How long ``serve --detach`` waits for the service to answer (a first start downloads
#: nothing, but ingesting --docs may take minutes).
DETACH_WAIT_S = 600.0


def _detach(
    settings: Settings,
    host: str,
    port: int,
    workers: int,
    docs: Path | None,
    workspace: str | None,
) -> None:
    """Start ``convrag serve`` with the same options in the background, in a session of
    its own, its output appended to ``CONVRAG_DATA_DIR/serve.log``; return once it
    answers, printing where, or exit 1 with the log's end when it stops first."""
    import subprocess
    import sys
    import time

    args = ["serve", "--host", host, "--port", str(port), "--workers", str(workers)]
    if docs is not None and workspace is not None:
        args += ["--docs", str(docs.resolve()), "--workspace", workspace]
    log = settings.data_dir / LOG_NAME
    env = {**os.environ, "CONVRAG_DATA_DIR": str(settings.data_dir)}
    with open(log, "ab") as fh:
        child = subprocess.Popen(
            [sys.executable, "-m", "convrag.cli", *args],
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    deadline = time.monotonic() + DETACH_WAIT_S
    while child.poll() is None and time.monotonic() < deadline:
        record = read_record(settings.data_dir)
        if record is not None and record.pid == child.pid and _answers(record.url):
            print(f"convrag serving at {record.url} (pid {child.pid}); log: {log}", flush=True)
            if workspace is not None:
                print(f"API key of {workspace}: {settings.data_dir / workspace}.key", flush=True)
            return
        time.sleep(0.25)
    tail = log.read_text(errors="replace")[-2000:]
    if child.poll() is None:
        raise fail(
            f"the service did not answer in {DETACH_WAIT_S:g} s (pid {child.pid}); "
            f"its log, {log}, ends:\n{tail}",
            1,
        )
    raise fail(f"the service exited with {child.returncode}; its log, {log}, ends:\n{tail}", 1)


def _answers(url: str) -> bool:
    """Whether the service at ``url`` answers its health check."""
    import httpx

    try:
        return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


#: How long ``convrag stop`` waits for the service to exit (its own shutdown is bounded
#: at about 10 s, the stores' stop after it).
STOP_WAIT_S = 60.0


@app.command()
def stop() -> None:
    """Stop the service running on the data directory (as Ctrl-C would: running turns
    finish, the embedded stores stop); exit 1 when none runs."""
    import signal
    import time

    from convrag.stores.embedded import pid_alive

    settings = get_settings()
    record = live_record(settings.data_dir)
    if record is None:
        raise fail(f"no convrag service runs on {settings.data_dir}", 1)
    os.kill(record.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while pid_alive(record.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if pid_alive(record.pid):
        raise fail(
            f"the service at {record.url} (pid {record.pid}) still runs {STOP_WAIT_S:g} s "
            f"after SIGTERM; `kill -9 {record.pid}` stops it at once",
            1,
        )
    print(f"stopped the convrag service at {record.url} (pid {record.pid})", flush=True)


#: The characters a default workspace name keeps; each other one becomes "-".
_NOT_IN_NAME = re.compile(r"[^a-z0-9_-]")

#: The most characters of a workspace id (:func:`convrag.ids.check_id`).
_MAX_WORKSPACE_CHARS = 64


def docs_workspace(path: Path) -> str:
    """The workspace ``serve --docs PATH`` fills when no ``--workspace`` is given: the
    folder's name, or the file's without its format's extension (``Handbook.pdf``:
    ``handbook``), lowercased, each character other than a-z 0-9 _ - replaced by ``-``,
    so that any name is a valid workspace id; ``docs`` for a path with no name (``/``)."""
    from convrag.documents.load import SUPPORTED

    resolved = path.resolve()
    name = resolved.name
    if not resolved.is_dir():
        lowered = name.lower()
        extension = max((s for s in SUPPORTED if lowered.endswith(s)), key=len, default="")
        name = name[: len(name) - len(extension)] or name
    return _NOT_IN_NAME.sub("-", name.lower())[:_MAX_WORKSPACE_CHARS] or "docs"


def _docs_fix(formats: bool = True) -> str:
    """What to give ``--docs`` instead, naming the formats read unless the message
    before it already does."""
    from convrag.documents.load import SUPPORTED

    listed = f" ({', '.join(SUPPORTED)})" if formats else ""
    return f"point --docs at a folder of documents or at one document{listed}"


def _docs_target(path: Path | None, workspace: str | None) -> str | None:
    """The workspace ``--docs`` goes into (None without ``--docs``), or exit 2 naming
    the path and the fix when it names nothing, before the port, the data directory or
    any store is touched."""
    if path is None:
        if workspace is not None:
            raise fail("--workspace names the workspace of --docs: give --docs PATH with it")
        return None
    if not path.exists():
        raise fail(f"--docs {path}: no such file or folder; {_docs_fix()}")
    return workspace or docs_workspace(path)


def _ingest_docs(path: Path, workspace: str, settings: Settings) -> None:
    """Ingest ``path`` into ``workspace`` with ``convrag ingest``'s own functions, then
    print the workspace and an API key for it: one step from a folder to a chat.

    The files are read before any store starts, so a path with no readable document
    exits 2 naming it. The key is kept in ``CONVRAG_DATA_DIR/<workspace>.key`` (mode
    600, as scripts/run.sh keeps the demo's), so every start prints the same key.
    """
    from convrag.cli.base import run_command
    from convrag.cli.documents import ingest_read, read_documents, report_ingest
    from convrag.cli.starting import starting_here
    from convrag.documents.base import IngestError

    try:
        read = read_documents([path])
    except IngestError as exc:
        raise fail(f"nothing to serve from --docs {path}: {exc}; {_docs_fix(False)}") from exc
    docs, unreadable = read.documents, read.unreadable
    if not docs:
        why = (
            f"none of its {unreadable} document file(s) could be read (listed above); fix them, or"
            if unreadable
            else "it holds no document;"
        )
        raise fail(f"nothing to serve from --docs {path}: {why} {_docs_fix()}")
    keyfile = settings.data_dir / f"{workspace}.key"

    first = f"starting the stores in {settings.data_dir} ..."
    with starting_here(settings, vectors=True, first=first) as waiting:

        async def go() -> tuple[dict[str, Any], list[tuple[str, str]], str]:
            from convrag.services import open_services

            async with open_services(settings, say=waiting.say) as services:
                waiting.done()
                result, gone = await ingest_read(services, workspace, docs, quiet=False)
                return result, gone, await _workspace_key(services, workspace, keyfile)

        result, gone, key = run_command(go, checked=True)  # checked before the port
    report_ingest(workspace, result, gone)
    print(f"workspace: {workspace}", flush=True)
    print(f"API key (also in {keyfile}): {key}", flush=True)


async def _workspace_key(services: Services, workspace: str, keyfile: Path) -> str:
    """The key ``keyfile`` keeps while it still opens ``workspace`` (not revoked), else a
    new one, written there readable by its owner alone."""
    kept = keyfile.read_text().strip() if keyfile.is_file() else ""
    if kept and await services.db.workspaces.workspace_for_key(kept) == workspace:
        return kept
    key = await services.db.workspaces.create_api_key(workspace)
    fd = os.open(keyfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        os.fchmod(fh.fileno(), 0o600)  # a file that existed keeps its mode otherwise
        fh.write(f"{key}\n")
    return key


def _url_host(host: str) -> str:
    """``host`` as a URL spells it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def _check_database(url: str) -> None:
    """Exit 2 naming the reason when ``url`` reaches no database, before the service
    starts: inside its startup the same failure is a traceback."""
    import asyncio

    from convrag.stores.database import first_connection

    try:
        asyncio.run(first_connection(url))
    except ValueError as exc:
        raise fail(exc) from None


def _check_milvus(settings: Settings) -> None:
    """Exit 2 naming the minimum version when the Milvus server at ``MILVUS_URI`` is too
    old for what the settings ask of it, before the service starts: inside its startup
    the same failure is a traceback. A server that does not answer is left to the start,
    which reports it."""
    from pymilvus import MilvusClient
    from pymilvus.exceptions import MilvusException

    from convrag.stores.milvus_schema import required_features

    assert settings.milvus_uri is not None
    token = settings.milvus_token.get_secret_value() if settings.milvus_token else ""
    try:
        client = MilvusClient(uri=settings.milvus_uri, token=token, timeout=5)
    except MilvusException:
        return
    try:
        required_features(client, bm25_required=settings.keyword_engine == "milvus")
    except ValueError as exc:
        raise fail(exc) from None
    except MilvusException:
        return
    finally:
        client.close()


def _check_data_dir(settings: Settings) -> None:
    """Exit 2 naming the directory when the embedded stores could not write it (read-only,
    not permitted, full), before they start: inside the startup it is a long traceback."""
    import os

    from convrag.cli.base import UNWRITABLE, unwritable

    probe = settings.data_dir / f".write-check-{os.getpid()}"
    try:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"convrag")
        probe.unlink()
    except OSError as exc:
        if exc.errno not in UNWRITABLE:
            raise
        raise fail(unwritable(exc)) from exc


def _check_port_free(host: str, port: int) -> None:
    """Exit 2 naming the port when something already listens there, before the stores
    start (a minute of startup would otherwise end in uvicorn's bind error)."""
    import socket

    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise fail(
                f"cannot listen on {host}:{port} ({exc.strerror}); stop what uses it or "
                "choose another with --port"
            ) from exc


def _serve_workers(host: str, port: int, workers: int, settings: Settings) -> None:
    """Run ``workers`` uvicorn worker processes, stateless: this process starts the
    embedded servers and hands their URLs to the workers through the environment (which
    a spawned worker reads its settings from), and stops them after the last worker."""
    import uvicorn

    from convrag.api.app import SUPERVISED_STORES_ENV, SUPERVISOR_ENV
    from convrag.server import GRACEFUL_S, log_config
    from convrag.services import install_sigterm_handler, shared_stores

    # Until uvicorn takes SIGTERM over, it must still unwind the servers started here.
    install_sigterm_handler()
    with shared_stores(settings) as env, _shared_metrics():
        os.environ.update(env)
        os.environ[SUPERVISOR_ENV] = str(os.getpid())
        # The workers' startup line then names these stores embedded, not external.
        started = {"postgres": "DATABASE_URL", "milvus": "MILVUS_URI"}
        os.environ[SUPERVISED_STORES_ENV] = ",".join(n for n, var in started.items() if var in env)
        uvicorn.run(
            "convrag.api.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_config=log_config(),
            timeout_graceful_shutdown=GRACEFUL_S,
        )


@contextmanager
def _shared_metrics() -> Iterator[None]:
    """A fresh directory for the workers' metrics (each worker's spawned interpreter
    reads the variable as it imports prometheus_client), removed after the last worker.
    A directory the environment already names (a deployment's own) is left to it."""
    from convrag.api.metrics import MULTIPROCESS_ENV

    if os.environ.get(MULTIPROCESS_ENV):
        yield
        return
    path = tempfile.mkdtemp(prefix="convrag-metrics-")
    os.environ[MULTIPROCESS_ENV] = path
    try:
        yield
    finally:
        os.environ.pop(MULTIPROCESS_ENV, None)
        shutil.rmtree(path, ignore_errors=True)
