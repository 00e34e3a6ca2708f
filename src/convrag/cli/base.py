"""The command line's shared parts: the app and its groups, the consoles, the exit on
a bad value, the workspace option, and running a command's async work.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from convrag.config import Settings, get_settings, settings_problems, where_set

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
            for line, variable in zip(settings_problems(exc), _variables(exc), strict=True):
                where = where_set(Settings, variable)
                err.print(f"[red]error:[/red] {escape(line)} (set in {escape(where)})")
            raise typer.Exit(2) from None


def _variables(exc: ValidationError) -> list[str]:
    """The variable each error of ``exc`` names (its first alias), in order."""
    return [".".join(str(part) for part in e["loc"]) for e in exc.errors(include_url=False)]


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


def workspace_option(value: str | None) -> str | None:
    """A ``--workspace`` value, checked before any work starts (exit 2 naming the rule);
    None where the option is optional and not given."""
    from convrag.ids import check_id

    if value is None:
        return None
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
        callback=workspace_option,
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


def run_command(make: Callable[[], Awaitable[T]]) -> T:
    from convrag.services import install_sigterm_handler

    warn_if_new_store(get_settings())
    install_sigterm_handler()
    try:
        return asyncio.run(make())  # type: ignore[arg-type]
    except ValueError as exc:  # our validation errors: clear message, exit 2
        raise fail(exc) from exc
    except OSError as exc:
        if exc.errno not in UNWRITABLE:
            raise
        raise fail(unwritable(exc)) from exc


UNWRITABLE = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT})
"""The ``errno`` values of a data directory that cannot be written: read-only, not
permitted, or full."""


def unwritable(exc: OSError) -> str:
    """One line for a data directory the stores cannot write, naming the file and the fix
    (instead of the traceback through the store that tried)."""
    where = f" {exc.filename}" if exc.filename else ""
    return (
        f"cannot write{where} ({exc.strerror}): CONVRAG_DATA_DIR "
        f"({get_settings().data_dir}) must be a writable directory with free space"
    )


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
