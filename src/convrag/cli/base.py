"""The command line's shared parts: the app and its groups, the consoles, the exit on
a bad value, the workspace option, and running a command's async work.
"""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from convrag.config import Settings, get_settings, setting_sources, settings_problems, where_set

if TYPE_CHECKING:
    from convrag.services import Services


NEW_STORE_ASKED: ContextVar[bool] = ContextVar("NEW_STORE_ASKED", default=False)
"""Whether ``convrag --new`` was given: the command may create an empty store."""


class _Commands(TyperGroup):
    """The command group: a bad setting in the environment or ``.env`` exits 2 with one line
    per setting that names it and its rule, instead of a traceback, whichever command read it."""

    ORDER = ("ingest", "ask", "serve", "search", "documents", "keys", "reindex", "sweep")
    """The commands in the order a new user meets them; the rest (config, eval) follow."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda n: self.ORDER.index(n) if n in self.ORDER else len(names))

    def invoke(self, ctx: Any) -> Any:
        NEW_STORE_ASKED.set(bool(ctx.params.get("new")))
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
    new: Annotated[
        bool,
        typer.Option(
            "--new",
            help="Let the command create an empty store where none is found (the per-user "
            "one, without CONVRAG_DATA_DIR) instead of refusing.",
        ),
    ] = False,
) -> None:
    """convrag: conversational RAG over your documents (LangGraph + Postgres + Milvus).

    The data directory is CONVRAG_DATA_DIR, else the nearest .convrag holding a store in
    this directory or a parent, else the per-user ~/.local/share/convrag."""


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


def check_store(settings: Settings) -> None:
    """Let a command go on when the data directory holds a store, or may get a new one:
    CONVRAG_DATA_DIR names it (a note says it is created) or ``--new`` was given.
    Otherwise exit 2 naming where a store was looked for and where this user's stores
    are: a command run from another directory would answer from a new, empty store as
    if the documents were gone."""
    from convrag.data_dirs import holds_store, remember_store

    if settings.database_url is not None:
        return
    if not holds_store(settings.data_dir):
        named = setting_sources(Settings).get("data_dir") != "default"
        if not (named or NEW_STORE_ASKED.get()):
            raise fail(_no_store(settings.data_dir))
        err.print(
            f"[yellow]note:[/yellow] no convrag store in {escape(str(settings.data_dir))}; "
            "creating a new, empty one."
        )
    remember_store(settings.data_dir)


def _no_store(target: Path) -> str:
    """Why no store is used, where one was looked for, this user's stores (each with the
    way to point a command at it), and the fixes."""
    from convrag.data_dirs import LOCAL_NAME, known_stores

    known = known_stores()
    where = (
        f" Your convrag stores: {', '.join(f'{p} ({_point_at(p)})' for p in known)}."
        if known
        else ""
    )
    return (
        f"no convrag store found: CONVRAG_DATA_DIR is unset, no {LOCAL_NAME} in "
        f"{Path.cwd()} or a parent holds one, and {target} holds none.{where} Point the "
        f"command at a store with CONVRAG_DATA_DIR=DIR, or cd into the folder that holds "
        f"its {LOCAL_NAME}; or give --new (convrag --new COMMAND ...) to create an empty "
        f"store in {target}."
    )


def _point_at(store: Path) -> str:
    """The shortest way to point a command at ``store``: ``cd`` into the folder that holds
    it, for a ``.convrag`` (found from there), else ``CONVRAG_DATA_DIR``."""
    from convrag.data_dirs import LOCAL_NAME

    if store.name == LOCAL_NAME:
        return f"cd {store.parent}"
    return f"CONVRAG_DATA_DIR={store}"


def run_command(make: Callable[[], Awaitable[T]], *, checked: bool = False) -> T:
    """Run a command's async work: the store checked first (:func:`check_store`, unless
    ``checked``), SIGTERM turned into an exit that stops the embedded servers, and a
    ``ValueError`` or an unwritable data directory exits 2 naming the problem."""
    from convrag.services import install_sigterm_handler

    if not checked:
        check_store(get_settings())
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
    from convrag.admin import empty_note

    say_note(await empty_note(services.db, workspace))


def say_note(note: str | None) -> None:
    """Print an operation's note (a workspace without documents) on stderr, if any."""
    if note:
        err.print(escape(note), style="yellow")
