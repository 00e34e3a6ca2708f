"""The ``convrag`` command line: config, ingest, reindex, search, ask, serve, keys, documents,
sweep, eval.

Every command honours ``CONVRAG_DATA_DIR`` (and the other settings), so two data
directories never mix.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from typer.core import TyperGroup

from convrag.config import Settings, get_settings, settings_problems
from convrag.records import SearchMode

if TYPE_CHECKING:
    from convrag.services import Services


class _Commands(TyperGroup):
    """The command group: a bad setting in the environment or ``.env`` exits 2 with one line
    per setting that names it and its rule, instead of a traceback, whichever command read it."""

    ORDER = ("ingest", "ask", "serve", "search", "documents", "keys", "reindex", "sweep")
    """The commands in the order a new user meets them; the rest (config, eval) follow."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: self.ORDER.index(n) if n in self.ORDER else len(names))

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ValidationError as exc:
            if exc.title != Settings.__name__:
                raise
            for line in settings_problems(exc):
                err.print(f"[red]error:[/red] {escape(line)} (set in the environment or .env)")
            raise typer.Exit(2) from None


app = typer.Typer(
    cls=_Commands,
    help="convrag: conversational RAG over your documents (LangGraph + Postgres + Milvus).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: the rich layout printed a "<bool>" type beside every flag.
    rich_markup_mode=None,
)


def _show_version(value: bool) -> None:
    if value:
        from convrag import __version__

        print(f"convrag {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """convrag: conversational RAG over your documents (LangGraph + Postgres + Milvus)."""


documents_app = typer.Typer(help="List and delete ingested documents.", no_args_is_help=True)
keys_app = typer.Typer(help="Workspace API keys.", no_args_is_help=True)
eval_app = typer.Typer(help="Quality evaluation on external benchmarks.", no_args_is_help=True)
app.add_typer(documents_app, name="documents")
app.add_typer(keys_app, name="keys")
app.add_typer(eval_app, name="eval")

# soft_wrap: Rich hard-wraps at 80 columns when not on a terminal, which splits error
# messages (and the paths in them) across lines in logs and pipes.
err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)
T = TypeVar("T")


def fail(message: object, code: int = 2) -> typer.Exit:
    """Print ``error: message`` on stderr, unwrapped and unstyled inside, and return the exit.

    The message is escaped so that paths or values with ``[brackets]`` print verbatim.
    """
    err.print(f"[red]error:[/red] {escape(str(message))}")
    return typer.Exit(code)


MtragDataOpt = Annotated[
    Path,
    typer.Option(
        metavar="DIR",
        help="MTRAG directory (../shared/bench/mtrag) or one domain directory of that format.",
    ),
]
DomainOpt = Annotated[
    str, typer.Option(metavar="DOMAIN", help="clapnq, cloud, or another domain folder.")
]
OutOpt = Annotated[
    Path | None, typer.Option("--out", metavar="FILE", help="Write the JSON report here.")
]
LimitOpt = Annotated[int | None, typer.Option(metavar="N", help="Score only the first N turns.")]

SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="NAME=VALUE",
        help="Set a run knob of convrag's graph (repeatable), e.g. --set feedback_weight=0.2: "
        "fit a default on one domain, then test it on another. The knobs are the fields of "
        "convrag.context.Context.",
    ),
]


def _workspace_id(value: str) -> str:
    """The ``--workspace`` value, checked before any work starts (exit 2 naming the rule)."""
    from convrag.ids import check_id

    try:
        return check_id(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


WorkspaceOpt = Annotated[
    str,
    typer.Option(
        "--workspace",
        "-w",
        metavar="WORKSPACE",
        help="Workspace id (documents never cross workspaces).",
        callback=_workspace_id,
    ),
]


def warn_if_new_store(settings: Settings) -> None:
    """Say so when the embedded store is about to be created: a command run from another
    directory (the default data directory is ``./.convrag``) would otherwise answer from
    a new, empty store as if the documents were gone."""
    if settings.database_url is None and not (settings.data_dir / "pg").exists():
        err.print(
            f"[yellow]note:[/yellow] no convrag store in {escape(str(settings.data_dir))}; "
            "creating a new, empty one. To use an existing store, run from the directory "
            "that holds its .convrag or set CONVRAG_DATA_DIR (scripts/run.sh uses the "
            "repository's .convrag)."
        )


def _run(make: Callable[[], Awaitable[T]]) -> T:
    from convrag.services import install_sigterm_handler

    warn_if_new_store(get_settings())
    install_sigterm_handler()
    try:
        return asyncio.run(make())  # type: ignore[arg-type]
    except ValueError as exc:  # our validation errors: clear message, exit 2
        raise fail(exc) from exc


Step = Callable[[str, int, int], None]


def _overrides(pairs: list[str] | None) -> dict[str, Any]:
    """The ``--set`` pairs as context knobs, or a clear exit 2 before any work starts."""
    from convrag.context import Context

    try:
        return Context.parse_overrides(pairs or [])
    except ValueError as exc:
        raise fail(exc) from exc


def _evaluate(run: Callable[[Services, Step], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """Run an evaluation on freshly opened services, with one progress bar per stage."""
    from convrag.services import open_services

    async def go() -> dict[str, Any]:
        async with open_services() as services:
            with _progress() as bar:
                tasks: dict[str, Any] = {}

                def step(name: str, done: int, total: int) -> None:
                    if name not in tasks:
                        tasks[name] = bar.add_task(name, total=total)
                    bar.update(tasks[name], completed=done)

                return await run(services, step)

    return _run(go)


async def note_if_empty(services: Services, workspace: str) -> None:
    """Say on stderr when ``workspace`` holds no documents, naming those that do: most
    often the name was mistyped, and the command would otherwise just find nothing."""
    if await services.db.list_documents(workspace, limit=1):
        return
    known = await services.db.workspaces_with_documents()
    where = f"workspaces with documents: {', '.join(known)}" if known else "none has any yet"
    err.print(
        escape(
            f"note: workspace {workspace!r} has no documents ({where}); "
            f"add some with `convrag ingest PATH -w {workspace}`"
        ),
        style="yellow",
    )


@app.command()
def config(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print the effective settings (secrets masked)."""
    data = get_settings().masked()
    if as_json:
        print(json.dumps(data, indent=2, default=str))
        return
    table = Table("setting", "value")
    for k, v in data.items():
        table.add_row(k, "" if v is None else str(v))
    out.print(table)


@app.command()
def ingest(
    paths: Annotated[
        list[Path],
        typer.Argument(
            metavar="PATH",
            help="Files or directories (.txt .md .html .pdf .docx .jsonl .jsonl.gz).",
        ),
    ],
    workspace: WorkspaceOpt,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Ingest documents idempotently: unchanged files change nothing, changed ones replace."""
    from convrag.documents import (
        SUPPORTED,
        IngestError,
        SourceDocument,
        expand_paths,
        load_path,
    )
    from convrag.ingest import ingest_documents
    from convrag.services import open_services

    settings = get_settings()
    skipped: list[Path] = []
    try:
        files = expand_paths(paths, skipped)
    except IngestError as exc:
        raise fail(exc) from exc
    named = {p.resolve() for p in paths if not p.is_dir()}
    loaded: list[tuple[Path, list[SourceDocument]]] = []
    unreadable: list[str] = []
    for f in files:
        try:
            loaded.append((f, load_path(f, max_bytes=settings.max_file_bytes)))
        except IngestError as exc:
            if f.resolve() in named:
                raise fail(exc) from exc
            unreadable.append(str(exc))  # found in a directory: the others still go in
    for problem in unreadable:
        err.print(escape(f"not ingested: {problem}"), style="yellow")
    for f in skipped:
        why = (
            f"a link to {f.readlink()}, which does not exist"
            if f.is_symlink() and not f.exists()
            else f"unsupported format '{f.suffix or f.name}' (supported: {', '.join(SUPPORTED)})"
        )
        err.print(escape(f"skipped {f}: {why}"), style="yellow")
    docs = [d for _, ds in loaded for d in ds]

    async def go() -> Any:
        async with open_services(settings) as services:
            with _progress("documents", quiet=quiet) as bar:
                task = bar.add_task("ingest", total=len(docs))
                return await ingest_documents(
                    services, workspace, docs, progress=lambda n: bar.advance(task, n)
                )

    report = _run(go)
    print(json.dumps(report.as_json()))
    if unreadable:
        err.print(
            f"{len(unreadable)} file(s) could not be read (listed above); fix them and run "
            "the same command again: unchanged files are not ingested twice"
        )
        raise typer.Exit(1)


@dataclass
class _LogTask:
    description: str
    total: float | None
    done: float = 0.0
    started: float = field(default_factory=time.monotonic)
    printed_at: float | None = None
    printed_done: float | None = None


class _LogProgress:
    """Progress where stderr is not a terminal (a log file, a pipe, CI). rich draws its
    bar there only when the work ends, so a long ingest would print nothing for minutes:
    this prints a line per task at most every ``every_s`` seconds, and when it is done."""

    def __init__(self, unit: str, every_s: float = 10.0) -> None:
        self.unit = f" {unit}" if unit else ""
        self.every_s = every_s
        self._tasks: list[_LogTask] = []

    def __enter__(self) -> _LogProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        for task in self._tasks:
            if task.printed_done != task.done:
                self._print(task)

    def add_task(self, description: str, total: float | None = None) -> TaskID:
        self._tasks.append(_LogTask(description, total))
        return TaskID(len(self._tasks) - 1)

    def update(
        self, task_id: TaskID, *, completed: float | None = None, total: float | None = None
    ) -> None:
        task = self._tasks[task_id]
        if total is not None:
            task.total = total
        if completed is not None:
            task.done = completed
        finished = task.total is not None and task.done >= task.total
        due = task.printed_at is None or time.monotonic() - task.printed_at >= self.every_s
        if finished or due:
            self._print(task)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        self.update(task_id, completed=self._tasks[task_id].done + advance)

    def _print(self, task: _LogTask) -> None:
        of = f"/{task.total:.0f}" if task.total else ""
        share = f" ({100 * task.done / task.total:.0f}%)" if task.total else ""
        elapsed = time.monotonic() - task.started
        print(
            f"{task.description}: {task.done:.0f}{of}{self.unit}{share}, {elapsed:.0f} s",
            file=sys.stderr,
            flush=True,
        )
        task.printed_at, task.printed_done = time.monotonic(), task.done


def _progress(unit: str = "", *, quiet: bool = False) -> Progress | _LogProgress:
    """Progress on stderr for long work, each task labelled by its description: a live
    bar on a terminal, periodic lines elsewhere."""
    if not err.is_terminal and not quiet:
        return _LogProgress(unit)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        console=err,
        disable=quiet,
    )


@app.command()
def search(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="The search query.")],
    workspace: WorkspaceOpt,
    top_k: Annotated[
        int, typer.Option("--top-k", "-k", min=1, max=100, metavar="N", help="How many results.")
    ] = 5,
    mode: Annotated[
        SearchMode, typer.Option(help="Both lists fused, or the dense or keyword list alone.")
    ] = "hybrid",
    as_json: Annotated[bool, typer.Option("--json", help="Print a JSON list.")] = False,
) -> None:
    """Search a workspace: fused top-k with the score of each list."""
    from convrag.services import open_services

    async def go() -> Any:
        async with open_services() as services:
            await note_if_empty(services, workspace)
            return await services.searcher.search(workspace, query, top_k=top_k, mode=mode)

    results = _run(go)
    if as_json:
        print(json.dumps([r.as_json() for r in results], indent=2))
        return
    table = Table("#", "score", "dense", "bm25", "document", "text")
    for i, r in enumerate(results, 1):
        table.add_row(
            str(i),
            f"{r.score:.4f}",
            "-" if r.dense_score is None else f"{r.dense_score:.4f}",
            "-" if r.bm25_score is None else f"{r.bm25_score:.3f}",
            r.title or r.document_id[:8],
            r.text[:90].replace("\n", " "),
        )
    out.print(table)


@app.command()
def reindex(
    workspace: WorkspaceOpt,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Embed a workspace again with the configured EMBEDDING_MODEL, from the chunk texts
    kept in Postgres (no file is read), and record that model as the workspace's. Needed
    after changing EMBEDDING_MODEL: vectors of two models cannot be compared."""
    from convrag.ingest import reindex_workspace
    from convrag.services import open_services

    async def go() -> dict[str, Any]:
        async with open_services() as services:
            with _progress("chunks", quiet=quiet) as bar:
                task = bar.add_task("reindex", total=None)
                n = await reindex_workspace(
                    services,
                    workspace,
                    progress=lambda done, total: bar.update(task, completed=done, total=total),
                )
            return {"workspace": workspace, "chunks": n, "model": services.embedder.name}

    print(json.dumps(_run(go)))


@documents_app.command("list")
def documents_list(workspace: WorkspaceOpt) -> None:
    """List the documents of a workspace as JSON lines."""
    from convrag.services import open_services

    async def go() -> Any:
        async with open_services() as services:
            await note_if_empty(services, workspace)
            return await services.db.list_documents(workspace)

    for d in _run(go):
        print(
            json.dumps(
                {
                    "id": str(d["id"]),
                    "source": d["source"],
                    "title": d["title"],
                    "status": d["status"],
                    "n_chunks": d["n_chunks"],
                }
            )
        )


@documents_app.command("delete")
def documents_delete(
    document_id: Annotated[
        str,
        typer.Argument(
            metavar="DOCUMENT_ID", help="The document's id, as `documents list` shows it."
        ),
    ],
    workspace: WorkspaceOpt,
) -> None:
    """Delete a document and all its chunks from both stores."""
    from convrag.ingest import delete_document
    from convrag.services import open_services

    async def go() -> bool:
        async with open_services() as services:
            return await delete_document(services, workspace, document_id)

    if not _run(go):
        raise fail(f"no document {document_id} in workspace {workspace}", code=1)
    print(json.dumps({"deleted": document_id}))


@app.command()
def sweep() -> None:
    """Delete conversations inactive for longer than CONVERSATION_TTL_DAYS, in every
    workspace, from every store (a running service also does this hourly); prints how
    many."""
    from convrag.assistant import open_assistant
    from convrag.conversations import sweep_expired

    ttl = get_settings().conversation_ttl_days
    if not ttl:
        raise fail("CONVERSATION_TTL_DAYS is not set: conversations are kept forever")

    async def go() -> int:
        async with open_assistant() as bot:
            return await sweep_expired(bot, ttl)

    print(json.dumps({"deleted": _run(go), "ttl_days": ttl}))


@keys_app.command("create")
def keys_create(workspace: WorkspaceOpt) -> None:
    """Issue an API key for a workspace; prints the key alone (it is stored hashed)."""
    from convrag.services import open_services

    async def go() -> str:
        async with open_services() as services:
            return await services.db.create_api_key(workspace)

    print(_run(go))


@eval_app.command("mtrag")
def eval_mtrag(
    data: MtragDataOpt,
    domain: DomainOpt = "clapnq",
    out_file: OutOpt = None,
    strategy: Annotated[
        list[str] | None,
        typer.Option(
            "--strategy", "-s", metavar="NAME", help="Run only these strategies (repeatable)."
        ),
    ] = None,
    limit: LimitOpt = None,
    knobs: SetOpt = None,
) -> None:
    """Retrieval quality on MTRAG: baselines and convrag's pipeline, split by turn type."""
    from convrag.evaluation.mtrag import evaluate_mtrag
    from convrag.evaluation.report import retrieval_table, write_json

    overrides = _overrides(knobs)
    report = _evaluate(
        lambda services, step: evaluate_mtrag(
            services,
            data,
            domain,
            strategies=strategy,
            limit=limit,
            progress=step,
            overrides=overrides,
        )
    )
    write_json(report, out_file)
    for split in ("all", "followup", "standalone"):
        out.print(retrieval_table(report, split) + "\n")


@eval_app.command("answers")
def eval_answers(
    data: MtragDataOpt,
    domain: DomainOpt = "clapnq",
    out_file: OutOpt = None,
    llm: Annotated[
        bool,
        typer.Option(
            "--llm",
            help="Answer with the configured LLM (OPENAI_BASE_URL); by default no LLM is used.",
        ),
    ] = False,
    offtopic_domain: Annotated[
        str | None,
        typer.Option(
            metavar="DOMAIN",
            help="Domain whose first-turn questions are asked as off-topic questions "
            "(default: the next domain folder found in --data).",
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(metavar="N", help="Score only the first N turns (and N off-topic ones)."),
    ] = None,
    knobs: SetOpt = None,
    turns_file: Annotated[
        Path | None,
        typer.Option(
            "--turns",
            metavar="FILE",
            help="Write convrag's answer to every turn here (JSON lines: label, question, "
            "query, answer, abstained, ROUGE-L, cites gold), to see which answers a change "
            "moved.",
        ),
    ] = None,
) -> None:
    """Answer quality on MTRAG: abstention, ROUGE-L and citations, with two baselines."""
    from convrag.evaluation.answers import evaluate_answers
    from convrag.evaluation.report import answers_table, write_json

    overrides = _overrides(knobs)
    report = _evaluate(
        lambda services, step: evaluate_answers(
            services,
            data,
            domain,
            llm=llm,
            offtopic_domain=offtopic_domain,
            limit=limit,
            progress=step,
            overrides=overrides,
            turns_out=turns_file,
        )
    )
    write_json(report, out_file)
    out.print(answers_table(report))


@eval_app.command("rewrite")
def eval_rewrite(
    data: Annotated[
        Path,
        typer.Option(
            metavar="FILE",
            help="CANARD jsonl (../shared/bench/canard/dev_half.jsonl) or an MTRAG "
            "turns.jsonl (../shared/bench/mtrag/clapnq/turns.jsonl).",
        ),
    ],
    out_file: OutOpt = None,
    limit: Annotated[
        int | None, typer.Option(metavar="N", help="Only the first N questions.")
    ] = None,
) -> None:
    """Rewrite quality: BLEU and token F1 of the rules rewrite against CANARD's human
    rewrites or MTRAG's rewrite_llm."""
    from convrag.evaluation.canard import evaluate_rewrite
    from convrag.evaluation.report import rewrite_table, write_json

    try:
        report = evaluate_rewrite(data, limit=limit)
    except ValueError as exc:
        raise fail(exc) from exc
    write_json(report, out_file)
    out.print(rewrite_table(report))


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
    from convrag.server import run

    settings = get_settings()
    _check_port_free(host, port)
    warn_if_new_store(settings)
    if workers == 1:
        run(host, port, settings)
        return
    _serve_workers(host, port, workers, settings)


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
    import os

    import uvicorn

    from convrag.server import GRACEFUL_S
    from convrag.services import install_sigterm_handler, shared_stores

    # Until uvicorn takes SIGTERM over, it must still unwind the servers started here.
    install_sigterm_handler()
    with shared_stores(settings) as env:
        os.environ.update(env)
        uvicorn.run(
            "convrag.api.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level="info",
            timeout_graceful_shutdown=GRACEFUL_S,
        )


@app.command()
def ask(
    question: Annotated[str, typer.Argument(metavar="QUESTION", help="Your question.")],
    workspace: WorkspaceOpt,
    conversation: Annotated[
        str | None,
        typer.Option(
            "--conversation",
            "-c",
            metavar="CONVERSATION_ID",
            help="Continue this conversation id (printed after each answer).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the whole turn as JSON.")] = False,
) -> None:
    """Ask one question from the command line; follow-ups keep the conversation id."""
    from convrag.assistant import open_assistant
    from convrag.context import Context

    if not question.strip():
        raise fail('the question is empty: ask something, e.g. convrag ask "Who is Maria?" -w demo')

    async def go() -> Any:
        async with open_assistant() as bot:
            await note_if_empty(bot.services, workspace)
            if conversation is not None and not await bot.services.db.conversation_exists(
                workspace, conversation
            ):
                raise ValueError(
                    f"no conversation {conversation!r} in workspace {workspace!r}; leave out "
                    "-c to start one (each answer prints its conversation id)"
                )
            conv = conversation or await bot.new_conversation(workspace)
            return await bot.ask(
                question, conv, workspace_id=workspace, context=Context(workspace_id=workspace)
            )

    state = _run(go)
    if as_json:
        keep = (
            "conversation_id",
            "turn_id",
            "classification",
            "rewritten_query",
            "answer",
            "citations",
            "sources",
            "flags",
            "timings",
        )
        print(json.dumps({k: state.get(k) for k in keep}, indent=2, default=str))
        return
    out.print(state["answer"], markup=False, highlight=False)
    labels = [
        src.get("url") or src.get("title") or src["document_id"] for src in state.get("sources", [])
    ]
    cited = {c["source_index"] for c in state.get("citations", [])}
    if (state.get("flags") or {}).get("no_answer"):
        cited = set()  # numbered sources under "not found" would read as citations
    for n, label in enumerate(labels, 1):
        if n in cited:
            err.print(escape(f"[{n}] {label}"), style="dim")
    others = [str(label) for n, label in enumerate(labels, 1) if n not in cited]
    if others:
        what = "closest sources, none of which answers" if not cited else "also retrieved"
        err.print(escape(f"{what}: {', '.join(dict.fromkeys(others))}"), style="dim")
    err.print(f"[dim]conversation: {state['conversation_id']}  (continue with -c)[/dim]")


@keys_app.command("list")
def keys_list(workspace: WorkspaceOpt) -> None:
    """List a workspace's API keys as JSON lines, revoked ones included, without the keys.

    Keys are stored as their SHA-256 only, so a key is shown by its id, its first 8
    characters and a fingerprint: the first 12 hex digits of its SHA-256 (to match a key
    you hold: ``printf %s "$KEY" | sha256sum | cut -c1-12``).
    """
    from convrag.services import open_services
    from convrag.stores.workspaces import ApiKeyRecord

    async def go() -> list[ApiKeyRecord]:
        async with open_services() as services:
            return await services.db.list_api_keys(workspace)

    for k in _run(go):
        print(
            json.dumps(
                {
                    "id": k.id,
                    "prefix": k.prefix,
                    "fingerprint": k.fingerprint,
                    "created_at": k.created_at.isoformat(),
                    "revoked": k.revoked,
                    "revoked_at": k.revoked_at.isoformat() if k.revoked_at else None,
                }
            )
        )


#: The fewest characters of an id or fingerprint ``keys revoke`` takes as naming a key.
MIN_KEY_REF_CHARS = 4


@keys_app.command("revoke")
def keys_revoke(
    key: Annotated[
        str,
        typer.Argument(
            metavar="KEY_OR_ID",
            help="The key, or how `keys list` shows it: its id (or the first 4 or more "
            "characters of it), its prefix, or its fingerprint.",
        ),
    ],
    workspace: Annotated[
        str | None,
        typer.Option(
            "--workspace", "-w", metavar="WORKSPACE", help="Look only among this workspace's keys."
        ),
    ] = None,
) -> None:
    """Revoke an API key (a running server stops accepting it within 30 s).

    Name it by the key itself or by what ``keys list`` shows of it; a name that matches
    no key, or more than one active key, revokes nothing and says so (exit 1).
    """
    from convrag.ids import check_id
    from convrag.services import open_services
    from convrag.stores.workspaces import ApiKeyRecord

    ref = key.strip()

    async def go() -> tuple[list[ApiKeyRecord], bool]:
        if workspace is not None:
            check_id(workspace)  # a ValueError here exits 2 naming the allowed alphabet
        if len(ref) < MIN_KEY_REF_CHARS:
            raise ValueError(
                f"{key!r} is too short to name a key: give the key, its id, its prefix or "
                f"its fingerprint as `convrag keys list` shows them (at least "
                f"{MIN_KEY_REF_CHARS} characters)"
            )
        async with open_services() as services:
            matched = await services.db.find_api_keys(ref, workspace)
            active = [k for k in matched if not k.revoked]
            if len(active) != 1:
                return matched, False
            return active, await services.db.revoke_api_key_id(active[0].id)

    matched, revoked = _run(go)
    active = [k for k in matched if not k.revoked]
    where = f" in workspace {workspace}" if workspace else ""
    if len(active) > 1:
        listed = ", ".join(f"{k.id} ({k.prefix})" for k in active)
        raise fail(
            f"{ref!r} matches {len(active)} active keys{where}: {listed}; "
            "give more of the id, or the whole id",
            code=1,
        )
    if not revoked:
        if gone := active or matched:
            raise fail(f"key {gone[0].id} ({gone[0].prefix}) is already revoked", code=1)
        raise fail(
            f"no key{where} matches {ref!r}; `convrag keys list -w WORKSPACE` shows each "
            "key's id, prefix and fingerprint",
            code=1,
        )
    k = active[0]
    print(json.dumps({"revoked": k.id, "prefix": k.prefix, "fingerprint": k.fingerprint}))


def main() -> None:  # pragma: no cover - console entry
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())


__all__ = ["Settings", "app"]
