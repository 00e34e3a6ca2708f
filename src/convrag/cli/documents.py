"""Commands on a workspace's documents: ingest, search, reindex, documents list/delete."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from convrag.cli.base import (
    WorkspaceOpt,
    app,
    check_store,
    documents_app,
    err,
    fail,
    note_if_empty,
    out,
    run_command,
    say_note,
)
from convrag.cli.remote import operate
from convrag.config import get_settings
from convrag.records import SearchMode

if TYPE_CHECKING:
    from convrag.documents.base import NothingToIndex, SourceDocument
    from convrag.services import Services


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
    prune: Annotated[
        bool,
        typer.Option(
            "--prune",
            help="Also delete the documents read from files under the named directories "
            "that no longer exist.",
        ),
    ] = False,
) -> None:
    """Ingest documents idempotently: unchanged files change nothing, changed ones replace.

    A document is known by its path (a .jsonl record by its _id). A file found at a new
    path with the content of a document whose file is gone replaces it ("moved"). A file
    deleted since stays in the workspace until `convrag documents delete ID`, or until the
    directory is ingested again with --prune.

    Files with nothing to index (a page of navigation alone, an empty file) are skipped
    with a note. Exit 0 when everything that holds text went in; 1 when a file found in a
    directory could not be read (named with its reason; the rest went in); 2 when nothing
    was ingested (bad input, no store).
    """
    from convrag.cli.starting import starting_here
    from convrag.documents.base import IngestError

    roots = [p.resolve() for p in paths if p.is_dir()]
    if prune and not roots:
        raise fail("--prune needs a directory among the paths: it removes what is gone from one")
    try:
        read = read_documents(paths, allow_empty=prune, quiet=quiet)
    except IngestError as exc:
        raise fail(exc) from exc

    settings = get_settings()
    check_store(settings)
    first = f"starting the stores in {settings.data_dir} ..."
    with starting_here(settings, vectors=True, first=first, quiet=quiet) as waiting:

        async def go() -> tuple[dict[str, Any], list[tuple[str, str]]]:
            from convrag.services import open_services

            async with open_services(settings, say=waiting.say) as services:
                waiting.done()
                return await ingest_read(
                    services,
                    workspace,
                    read.documents,
                    quiet=quiet,
                    prune_roots=roots if prune else None,
                )

        result, gone = run_command(go, checked=True)
    result["skipped"] = len(read.nothing_to_index)
    report_ingest(workspace, result, gone)
    if read.nothing_to_index:
        err.print(
            f"{len(read.nothing_to_index)} file(s) hold no text to index and were skipped "
            "(listed above); nothing is wrong with them"
        )
    if read.unreadable:
        err.print(
            f"{read.unreadable} file(s) could not be read (listed above); fix them and run "
            "the same command again: unchanged files are not ingested twice"
        )
        raise typer.Exit(1)


@dataclass
class FilesRead:
    """What :func:`read_documents` read: the documents, how many files found in a
    directory could not be read (each said on stderr), and the files that hold nothing
    to index (each said on stderr as skipped)."""

    documents: list[SourceDocument]
    unreadable: int = 0
    nothing_to_index: list[NothingToIndex] = field(default_factory=list)


def read_documents(
    paths: list[Path], *, allow_empty: bool = False, quiet: bool = False
) -> FilesRead:
    """The documents of ``paths`` (files, and the supported files under directories, read
    recursively): what ``convrag ingest`` and ``convrag serve --docs`` ingest, read the
    same way, before any store starts, under a progress bar of the files read.

    A file found in a directory that cannot be read, or is not a supported format, is
    said on stderr and left out, so that the others still go in; a directory with no
    supported file (unless ``allow_empty``), or a file named directly that cannot be
    read, raises :class:`~convrag.documents.base.IngestError`, since nothing the user asked
    for would be ingested. A file that holds nothing to index (a page of navigation, an
    empty file) is skipped with a note wherever it was found: nothing is wrong with it.
    Unless ``allow_empty``, finding nothing else raises the first such file's reason.
    """
    from convrag.cli.progress import progress_bar
    from convrag.documents.base import IngestError, NothingToIndex
    from convrag.documents.load import expand_paths, load_path

    settings = get_settings()
    skipped: list[Path] = []
    files = expand_paths(paths, skipped, allow_empty=allow_empty)
    named = {p.resolve() for p in paths if not p.is_dir()}
    read = FilesRead([])
    unreadable: list[str] = []
    with progress_bar("files", quiet=quiet or len(files) < 2) as bar:
        task = bar.add_task("reading", total=len(files))
        bar.update(task, completed=0)  # at once: a large file may take a while
        for f in files:
            try:
                read.documents += load_path(
                    f,
                    max_bytes=settings.max_file_bytes,
                    max_decompressed_bytes=settings.max_decompressed_bytes,
                    max_records=settings.max_records_per_file,
                )
            except NothingToIndex as exc:
                read.nothing_to_index.append(exc)
            except IngestError as exc:
                if f.resolve() in named:
                    raise
                unreadable.append(str(exc))  # found in a directory: the others still go in
            bar.advance(task)
    for problem in unreadable:
        err.print(escape(f"not ingested: {problem}"), style="yellow")
    for empty in read.nothing_to_index:
        err.print(escape(f"skipped {empty.path}: {empty.reason}, no text to index"), style="yellow")
    _say_skipped(skipped)
    if not read.documents and not unreadable and read.nothing_to_index and not allow_empty:
        raise read.nothing_to_index[0]
    read.unreadable = len(unreadable)
    return read


def _say_skipped(skipped: list[Path]) -> None:
    """One stderr line per file a directory held that is not read: a link to nothing, or
    a format no reader takes (naming those that are)."""
    from convrag.documents.load import SUPPORTED

    for f in skipped:
        why = (
            f"a link to {f.readlink()}, which does not exist"
            if f.is_symlink() and not f.exists()
            else f"unsupported format '{f.suffix or f.name}' (supported: {', '.join(SUPPORTED)})"
        )
        err.print(escape(f"skipped {f}: {why}"), style="yellow")


async def ingest_read(
    services: Services,
    workspace: str,
    docs: list[SourceDocument],
    *,
    quiet: bool,
    prune_roots: list[Path] | None = None,
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Ingest ``docs`` (of :func:`read_documents`) into ``workspace`` under a progress
    bar; with ``prune_roots``, delete the documents read from files under them that are
    gone. Returns the report ``convrag ingest`` prints, and the (id, path) of the
    documents still answered from whose files no longer exist."""
    from convrag.cli.progress import IngestProgress, progress_bar
    from convrag.ingest import ingest_documents
    from convrag.uploads import missing_files, prune_missing_files

    with progress_bar(quiet=quiet) as bar:
        shown = IngestProgress(bar, len(docs))
        report = await ingest_documents(
            services,
            workspace,
            docs,
            progress=shown.documents,
            chunk_progress=shown.chunks,
            chunked=shown.chunked,
            counted=shown.counted,
        )
    result = report.as_json()
    gone = await missing_files(services, workspace)
    if prune_roots is not None:
        pruned = await prune_missing_files(services, workspace, prune_roots, gone)
        gone = [g for g in gone if g[1] not in pruned]
        result["pruned"] = pruned
    return result, gone


def report_ingest(workspace: str, result: dict[str, Any], gone: list[tuple[str, str]]) -> None:
    """Print an ingest's report as one JSON line, and warn on stderr about the documents
    still answered from whose files are gone (with the two ways to remove them)."""
    print(json.dumps(result), flush=True)
    if not gone:
        return
    err.print(
        escape(
            f"{len(gone)} document(s) of workspace {workspace} were read from files that "
            "no longer exist and are still answered from: "
            + "; ".join(f"{path} ({doc_id})" for doc_id, path in gone[:5])
            + ("; ..." if len(gone) > 5 else "")
            + ". Delete them with `convrag documents delete ID -w "
            + f"{workspace}`, or ingest their directory again with --prune."
        ),
        style="yellow",
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
    done = operate("search", workspace=workspace, query=query, top_k=top_k, mode=mode)
    say_note(done["note"])
    results = done["results"]
    if as_json:
        print(json.dumps([{k: v for k, v in r.items() if k != "title"} for r in results], indent=2))
        return
    table = Table("#", "score", "dense", "bm25", "document", "text")
    for i, r in enumerate(results, 1):
        table.add_row(
            str(i),
            f"{r['score']:.4f}",
            "-" if r["dense_score"] is None else f"{r['dense_score']:.4f}",
            "-" if r["bm25_score"] is None else f"{r['bm25_score']:.3f}",
            r["title"] or r["document_id"][:8],
            r["text"][:90].replace("\n", " "),
        )
    out.print(table)


@app.command()
def reindex(
    workspace: WorkspaceOpt,
    reread: Annotated[
        bool,
        typer.Option(
            "--reread",
            help="Read every document's original file again with this version's readers "
            "(kept uploads and ingested files) and store what changed.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Embed a workspace again with the configured EMBEDDING_MODEL, from the chunk texts
    kept in Postgres (no file is read), and record that model as the workspace's. Needed
    after changing EMBEDDING_MODEL: vectors of two models cannot be compared. With
    --reread, read the documents' originals again instead: a newer reader's text,
    headings and chunks, without uploading anything again."""
    from convrag.cli.progress import progress_bar
    from convrag.ingest import reindex_workspace
    from convrag.services import open_services
    from convrag.uploads import reread_workspace

    async def go() -> dict[str, Any]:
        async with open_services(get_settings()) as services:
            await note_if_empty(services, workspace)
            with progress_bar("files" if reread else "chunks", quiet=quiet) as bar:
                task = bar.add_task("reread" if reread else "reindex", total=None)

                def step(done: int, total: int) -> None:
                    bar.update(task, completed=done, total=total)

                if reread:
                    report = await reread_workspace(services, workspace, progress=step)
                    return {"workspace": workspace, **report.as_json()}
                n = await reindex_workspace(services, workspace, progress=step)
            return {"workspace": workspace, "chunks": n, "model": services.embedder.name}

    print(json.dumps(run_command(go)))


@documents_app.command("list")
def documents_list(workspace: WorkspaceOpt) -> None:
    """List the documents of a workspace as JSON lines."""
    done = operate("documents-list", workspace=workspace)
    say_note(done["note"])
    for d in done["documents"]:
        print(json.dumps(d))


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
    if not operate("documents-delete", workspace=workspace, document_id=document_id)["deleted"]:
        raise fail(f"no document {document_id} in workspace {workspace}", code=1)
    print(json.dumps({"deleted": document_id}))
