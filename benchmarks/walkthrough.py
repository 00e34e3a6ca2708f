"""A new user's walkthrough as a figure: scripted conversations over a small workspace of
everyday documents, each turn checked against what its answer must say.

    CONVRAG_DATA_DIR=bench-out/walk python benchmarks/walkthrough.py --out bench-out/walk.json

``benchmarks/walkthrough/`` holds the workspace (an HR policy in Markdown with a table, an
IT FAQ in HTML, a product manual in plain text with numbered steps, a car policy in Word
with a table, a security policy as a PDF) and ``conversations.jsonl``: per turn, the
question and what the answer must hold:

- a phrase (or a list of phrases, any of which will do) that a right answer quotes;
- ``null``: the documents do not say, so the answer must be "not found" (``no_answer``);
- ``"chit"``: chit-chat, answered with a fixed reply and no search;
- ``"*"``: open ("tell me more"): any answer that is not "not found".

``--set benchmarks/followups`` runs another workspace of the same form: five short
documents (an FAQ, a company history, a timetable with fare tables, a leave policy, a
how-to) and 67 turns of follow-ups over them. The report also gives the mean number of
sentences an answer quotes (its ``[n]`` markers): a right answer padded with sentences of
other documents reads worse than a short one.

A turn ``{"delete": "<file>"}`` deletes that document before the next question (the last
conversation asks about it afterwards). The graph runs without an LLM, as a new user's
first start does. The workspace is ingested again at every run, so the deleted document
comes back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from convrag.assistant import open_assistant
from convrag.context import Context
from convrag.documents.load import load_path
from convrag.ingest import delete_document, ingest_documents

HERE = Path(__file__).with_name("walkthrough")
WORKSPACE = "walkthrough"


def kind(expect: Any) -> str:
    """The turn's category: answer, not_found, chit_chat or open."""
    if expect is None:
        return "not_found"
    if expect == "chit":
        return "chit_chat"
    if expect == "*":
        return "open"
    return "answer"


def judge(expect: Any, state: dict[str, Any]) -> bool:
    """Whether the turn's answer is what ``expect`` asks for."""
    refused = bool((state.get("flags") or {}).get("no_answer"))
    match kind(expect):
        case "not_found":
            return refused
        case "chit_chat":
            return state.get("classification") == "no_retrieval"
        case "open":
            return not refused
    phrases = [expect] if isinstance(expect, str) else list(expect)
    answer = str(state.get("answer", "")).lower()
    return not refused and any(p.lower() in answer for p in phrases)


async def run(here: Path = HERE) -> dict[str, Any]:
    conversations = [
        json.loads(line) for line in (here / "conversations.jsonl").read_text().splitlines()
    ]
    files = sorted(p for p in here.iterdir() if p.name != "conversations.jsonl")
    workspace = WORKSPACE if here == HERE else here.name
    turns: list[dict[str, Any]] = []
    async with open_assistant() as bot:
        ids: dict[str, str] = {}
        for path in files:
            await ingest_documents(bot.services, workspace, load_path(path, max_bytes=10**7))
        for doc in await bot.services.db.documents.list_documents(workspace, limit=100):
            ids[Path(str(doc["source"])).name] = str(doc["id"])
        context = Context(workspace_id=workspace, llm_model="none", web_search="off")
        for convo in conversations:
            conv = await bot.new_conversation(workspace)
            for turn in convo["turns"]:
                if "delete" in turn:
                    await delete_document(bot.services, workspace, ids[turn["delete"]])
                    continue
                state: dict[str, Any] = dict(
                    await bot.ask(turn["q"], conv, workspace_id=workspace, context=context)
                )
                ok = judge(turn["expect"], state)
                turns.append(
                    {
                        "conversation": convo["conversation"],
                        "question": turn["q"],
                        "kind": kind(turn["expect"]),
                        "right": ok,
                        "rewritten_query": state.get("rewritten_query"),
                        "no_answer": bool((state.get("flags") or {}).get("no_answer")),
                        "signals": state.get("abstention_signals"),
                        "answer": str(state.get("answer", ""))[:300],
                        "quoted": len(re.findall(r"\[\d+\]", str(state.get("answer", "")))),
                    }
                )
                print(
                    f"{'ok   ' if ok else 'WRONG'} {convo['conversation']}: {turn['q']}",
                    file=sys.stderr,
                )
    right = Counter(t["kind"] for t in turns if t["right"])
    total = Counter(t["kind"] for t in turns)
    return {
        "turns": len(turns),
        "right": sum(right.values()),
        "by_kind": {k: f"{right[k]}/{n}" for k, n in sorted(total.items())},
        "mean_quoted": round(sum(t["quoted"] for t in turns) / max(1, len(turns)), 2),
        "wrong": [t for t in turns if not t["right"]],
        "all": turns,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--set",
        type=Path,
        default=HERE,
        dest="here",
        help="the workspace folder with its conversations.jsonl",
    )
    args = parser.parse_args()
    report = asyncio.run(run(args.here.resolve()))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=1))
    print(
        f"{report['right']}/{report['turns']} turns right; by kind: {report['by_kind']}; "
        f"{report['mean_quoted']} sentences quoted per answer"
    )
    for t in report["wrong"]:
        print(
            f"- {t['conversation']}: {t['question']!r} -> {t['rewritten_query']!r}: "
            f"{'not found' if t['no_answer'] else t['answer'][:120]!r}"
        )


if __name__ == "__main__":
    main()
