"""Commands that run or describe the service: serve, config."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated

import typer
from rich.table import Column, Table

from convrag.cli.base import (
    app,
    fail,
    out,
    warn_if_new_store,
)
from convrag.config import Settings, get_settings, setting_sources


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
) -> None:
    """Start the HTTP service (SSE + OpenAI-compatible) on the settings in force.

    With no DATABASE_URL / MILVUS_URI it starts the embedded PostgreSQL and Milvus Lite
    under CONVRAG_DATA_DIR and stops them on exit (Ctrl-C or SIGTERM).
    """
    from convrag.llm import check_llm_model
    from convrag.server import run

    settings = get_settings()
    try:
        check_llm_model(settings)
    except ValueError as exc:
        raise fail(exc) from None
    _check_port_free(host, port)
    if settings.database_url is None or settings.milvus_uri is None:
        _check_data_dir(settings)
    if settings.database_url is not None:
        _check_database(settings.database_url.get_secret_value())
    warn_if_new_store(settings)
    if workers == 1:
        run(host, port, settings)
        return
    _serve_workers(host, port, workers, settings)


def _check_database(url: str) -> None:
    """Exit 2 naming the reason when ``url`` reaches no database, before the service
    starts: inside its startup the same failure is a traceback."""
    import asyncio

    from convrag.stores.database import first_connection

    try:
        asyncio.run(first_connection(url))
    except ValueError as exc:
        raise fail(exc) from None


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
