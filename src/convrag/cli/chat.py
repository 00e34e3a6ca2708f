"""Commands on conversations: ask a question, sweep expired conversations."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape

from convrag.cli.base import (
    WorkspaceOpt,
    app,
    err,
    fail,
    note_if_empty,
    out,
    run_command,
)
from convrag.config import get_settings


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
            return await bot.ask(question, conv, workspace_id=workspace)

    state = run_command(go)
    if as_json:
        keep = (
            "conversation_id",
            "turn_id",
            "classification",
            "rewritten_query",
            "rewrite_method",
            "answer",
            "citations",
            "sources",
            "flags",
            "timings",
        )
        print(json.dumps({k: state.get(k) for k in keep}, indent=2, default=str))
        return
    out.print(state["answer"], markup=False, highlight=False)
    labels = [_label(src) for src in state.get("sources", [])]
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
    flags = state.get("flags") or {}
    if flags.get("extractive_fallback"):
        err.print(
            escape(
                f"the LLM failed ({flags['extractive_fallback']}): this is the answer quoted "
                "from the sources instead"
            ),
            style="yellow",
        )
    err.print(f"[dim]conversation: {state['conversation_id']}  (continue with -c)[/dim]")


def _label(source: dict[str, Any]) -> str:
    """How a source is named under an answer: its title (and address, for a web page),
    else its address or document id."""
    title, url = source.get("title"), source.get("url")
    if title and url:
        return f"{title} <{url}>"
    return str(title or url or source["document_id"])


@app.command()
def sweep() -> None:
    """Delete conversations inactive for longer than CONVERSATION_TTL_DAYS, in every
    workspace, from every store (a running service also does this hourly); prints how
    many."""
    from convrag.assistant import open_assistant
    from convrag.conversations import sweep_expired

    ttl = get_settings().conversation_ttl_days
    if not ttl:
        # Not an error: a scheduled sweep with retention switched off has nothing to do.
        err.print("CONVERSATION_TTL_DAYS is unset or 0: conversations are kept; nothing to sweep")
        print(json.dumps({"deleted": 0, "ttl_days": None}))
        return

    async def go() -> int:
        async with open_assistant() as bot:
            return await sweep_expired(bot, ttl)

    print(json.dumps({"deleted": run_command(go), "ttl_days": ttl}))
