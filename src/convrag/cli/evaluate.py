"""Quality evaluation on external benchmarks: eval mtrag, answers, rewrite."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from convrag.cli.base import (
    eval_app,
    fail,
    out,
    run_command,
)

if TYPE_CHECKING:
    from convrag.services import Services
from convrag.config import get_settings

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


WithoutOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--without",
        metavar="RULE",
        help="Switch a rewrite rule off (repeatable), to measure what it earns: one of "
        "convrag.rewriting.gate.SWITCHES (an unknown name's error lists them; "
        "docs/evaluation.md too).",
    ),
]


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
    from convrag.cli.progress import progress_bar
    from convrag.services import open_services

    async def go() -> dict[str, Any]:
        async with open_services(get_settings()) as services:
            with progress_bar() as bar:
                tasks: dict[str, Any] = {}

                def step(name: str, done: int, total: int) -> None:
                    if name not in tasks:
                        tasks[name] = bar.add_task(name, total=total)
                    bar.update(tasks[name], completed=done)

                return await run(services, step)

    return run_command(go)


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
    without: WithoutOpt = None,
) -> None:
    """Retrieval quality on MTRAG: baselines and convrag's pipeline, split by turn type."""
    from convrag.evaluation.mtrag import evaluate_mtrag
    from convrag.evaluation.report import retrieval_table, write_json

    rules_off = [f"rewrite_rules_off={','.join(without)}"] if without else []
    overrides = _overrides([*(knobs or []), *rules_off])
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
            help="CANARD jsonl (../shared/bench/canard/dev_half.jsonl), an MTRAG "
            "turns.jsonl (../shared/bench/mtrag/clapnq/turns.jsonl) or conversations "
            "(benchmarks/realdocs_followups/conversations.jsonl).",
        ),
    ],
    out_file: OutOpt = None,
    limit: Annotated[
        int | None, typer.Option(metavar="N", help="Only the first N questions.")
    ] = None,
    without: WithoutOpt = None,
) -> None:
    """Rewrite quality: BLEU and token F1 of the rules rewrite against CANARD's human
    rewrites or MTRAG's rewrite_llm."""
    from convrag.evaluation.canard import evaluate_rewrite
    from convrag.evaluation.report import rewrite_table, write_json

    try:
        report = evaluate_rewrite(data, limit=limit, without=without or [])
    except ValueError as exc:
        raise fail(exc) from exc
    write_json(report, out_file)
    out.print(rewrite_table(report))


def _setting_default(name: str) -> int:
    """A setting's built-in default (not the environment's value): the scores of one
    corpus stay comparable across machines."""
    from convrag.config import Settings

    value = Settings.model_fields[name].default
    assert isinstance(value, int)
    return value


def _document_readers(
    names: list[str], from_dirs: list[str], size: int, overlap: int
) -> dict[str, Any]:
    """The readers to score by name: ``convrag`` reads with convrag, another NAME reads a
    library's Markdown from bench-out/reading/NAME, and NAME=DIR from DIR."""
    from convrag.evaluation.documents import convrag_reader, markdown_dir_reader

    folders: dict[str, Path] = {}
    for name in names:
        folders[name] = Path("bench-out/reading") / name
    for pair in from_dirs:
        name, sep, where = pair.partition("=")
        if not sep or not name or not where:
            raise fail(f"--from-dir {pair!r}: expected NAME=DIR")
        folders[name] = Path(where)
    readers: dict[str, Any] = {}
    for name, folder in folders.items():
        if name == "convrag" and name in names:
            readers[name] = convrag_reader(
                size,
                overlap,
                max_bytes=_setting_default("max_file_bytes"),
                max_decompressed=_setting_default("max_decompressed_bytes"),
                max_records=_setting_default("max_records_per_file"),
            )
        elif not folder.is_dir():
            raise fail(f"reader {name!r}: no folder {folder} (run benchmarks/reading_libraries.py)")
        else:
            readers[name] = markdown_dir_reader(folder, size, overlap)
    return readers


@eval_app.command("documents")
def eval_documents(
    corpus: Annotated[
        Path,
        typer.Option(metavar="DIR", help="Files with <stem>.expect.json beside each."),
    ] = Path("tests/documents/corpus"),
    out_file: OutOpt = None,
    chunk_size: Annotated[
        int, typer.Option(metavar="N", help="Chunk size (CHUNK_SIZE's default).")
    ] = _setting_default("chunk_size"),
    chunk_overlap: Annotated[
        int, typer.Option(metavar="N", help="Chunk overlap (CHUNK_OVERLAP's default).")
    ] = _setting_default("chunk_overlap"),
    reader: Annotated[
        list[str] | None,
        typer.Option(
            "--reader",
            metavar="NAME",
            help="Score this reader (repeatable): convrag, or a library whose Markdown "
            "benchmarks/reading_libraries.py wrote to bench-out/reading/NAME. "
            "Default: convrag (when no --from-dir is given).",
        ),
    ] = None,
    from_dir: Annotated[
        list[str] | None,
        typer.Option(
            "--from-dir",
            metavar="NAME=DIR",
            help="Score Markdown files <stem>.md (and <stem>.title) in DIR as reader NAME "
            "(repeatable).",
        ),
    ] = None,
) -> None:
    """Document reading quality: whole sentences, headings, terms, page furniture and
    titles of each reader's chunks, against the corpus's expectations."""
    from convrag.evaluation.documents import evaluate_documents, scores_table
    from convrag.evaluation.report import write_json

    if not corpus.is_dir():
        raise fail(f"--corpus {corpus}: no such directory")
    if chunk_overlap >= chunk_size:
        raise fail(f"--chunk-overlap ({chunk_overlap}) must be smaller than --chunk-size")
    names = reader or ([] if from_dir else ["convrag"])
    readers = _document_readers(names, from_dir or [], chunk_size, chunk_overlap)
    report = evaluate_documents(
        corpus, readers, settings={"chunk_size": chunk_size, "chunk_overlap": chunk_overlap}
    )
    if not report["files"]:
        raise fail(f"--corpus {corpus}: no <stem>.expect.json with its document file")
    write_json(report, out_file)
    out.print(scores_table(report))


def _set_and_knobs(values: list[str]) -> tuple[Path, list[str]]:
    """``--set`` values split into the conversation set's folder (the one value that is
    a directory, or has no ``=``) and ``NAME=VALUE`` knobs; exit 2 unless one folder."""
    folders = [v for v in values if Path(v).is_dir() or "=" not in v]
    if len(folders) != 1:
        found = ", ".join(folders) or "none"
        raise fail(
            "--set: name one conversation set folder (e.g. --set benchmarks/realconv/dev), "
            f"beside any NAME=VALUE knobs; folders given: {found}"
        )
    return Path(folders[0]), [v for v in values if v != folders[0]]


@eval_app.command("conversations")
def eval_conversations(
    values: Annotated[
        list[str],
        typer.Option(
            "--set",
            metavar="DIR|NAME=VALUE",
            help="The conversation set: a folder with docs/ and conversations.jsonl "
            "(benchmarks/realconv/dev). Given again as NAME=VALUE, a run knob of convrag's "
            "graph or a retrieval policy field (repeatable), as for eval answers.",
        ),
    ],
    out_file: OutOpt = None,
) -> None:
    """Conversations over real documents, played through the service: useful answers
    (their key facts quoted), wrong "not found", refusals and ask-backs, split by first
    turn and follow-up and by kind. With OPENAI_BASE_URL set, the configured LLM answers."""
    from convrag.evaluation.conversations import evaluate_conversations, load_set
    from convrag.evaluation.report import conversations_table, write_json

    folder, pairs = _set_and_knobs(values)
    try:
        load_set(folder)
    except ValueError as exc:
        raise fail(exc) from exc
    overrides = _overrides(pairs)
    report = _evaluate(
        lambda services, step: evaluate_conversations(
            services, folder, overrides=overrides, progress=step
        )
    )
    write_json(report, out_file)
    out.print(conversations_table(report))
