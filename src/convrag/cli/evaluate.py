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
from convrag.cli.progress import progress_bar

if TYPE_CHECKING:
    from convrag.services import Services


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
