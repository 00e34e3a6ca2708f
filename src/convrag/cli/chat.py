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
    out,
    run_command,
    say_note,
)
from convrag.cli.remote import operate
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
    if not question.strip():
        raise fail('the question is empty: ask something, e.g. convrag ask "Who is Maria?" -w demo')
    done = operate("ask", question=question, workspace=workspace, conversation=conversation)
    say_note(done["note"])
    state = done["turn"]
    if as_json:
        print(json.dumps(state, indent=2, default=str))
        return
    out.print(state["answer"], markup=False, highlight=False)
    labels = [_label(src) for src in state.get("sources") or []]
    cited = {c["source_index"] for c in state.get("citations") or []}
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
