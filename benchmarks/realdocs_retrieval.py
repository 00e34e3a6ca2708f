"""Follow-ups on real documents, by retrieval: the conversational layer against the same
stack on the raw last turn, and each rewrite rule switched off alone (issue 31).

    CONVRAG_DATA_DIR=$(mktemp -d) python benchmarks/realdocs_retrieval.py \\
        [--without RULE ...] --out bench-out/realdocs-retrieval.json

The ten documents of ``tests/documents/corpus`` go into one workspace, and the
conversations of ``benchmarks/realdocs_followups`` are asked through the graph without an
LLM, as a new user's first start asks them:

- ``convrag``: each conversation in one thread, turn after turn (its own answers as
  history);
- ``lastturn``: each question alone in a new thread (the whole stack on the raw last turn);
- ``reference``: each turn's standalone question, written by hand, alone in a new thread
  (what a perfect rewrite would search);
- ``without:RULE``: ``convrag`` with one rule (or ``gate``, ``continuation``) switched off.

MTRAG's passages are judged; these documents are not, so two figures stand in, over the
follow-ups: ``doc@1``, the share whose first source is from the conversation's document,
and ``ref@5``, the mean share of the reference question's five sources among the turn's
five (agreement with a perfect rewrite). The conversation's document is always the one a
turn is about, so anchoring to the last answer's sources can only help ``doc@1``: ``ref@5``
is the figure a wrong rewrite moves.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from convrag.assistant import Assistant, open_assistant
from convrag.context import Context
from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.rewriting.gate import check_switches

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests/documents/corpus"
CONVERSATIONS = ROOT / "benchmarks/realdocs_followups/conversations.jsonl"
WORKSPACE = "realdocs"
TOP = 5


def _top(state: Any, names: dict[str, str]) -> list[tuple[str, str]]:
    """(chunk id, document file) of the turn's first ``TOP`` document sources."""
    return [
        (s["id"], names.get(str(s.get("document_id")), ""))
        for s in state.get("sources") or []
        if s.get("source_type") == "chunk"
    ][:TOP]


async def _ask_alone(bot: Assistant, question: str, ctx: Context, names: dict[str, str]) -> Any:
    conv = await bot.new_conversation(WORKSPACE)
    return _top(await bot.ask(question, conv, workspace_id=WORKSPACE, context=ctx), names)


async def _strategy(
    bot: Assistant, name: str, convos: list[dict[str, Any]], names: dict[str, str]
) -> list[list[Any]]:
    """Each conversation's turns' top sources under strategy ``name``."""
    off = name.removeprefix("without:") if name.startswith("without:") else ""
    ctx = Context(workspace_id=WORKSPACE, llm_model="none", web_search="off", rewrite_rules_off=off)
    out: list[list[Any]] = []
    for convo in convos:
        turns: list[Any] = []
        if name in ("lastturn", "reference"):
            key = "question" if name == "lastturn" else "standalone"
            for turn in convo["turns"]:
                turns.append(await _ask_alone(bot, turn[key], ctx, names))
        else:
            conv = await bot.new_conversation(WORKSPACE)
            for turn in convo["turns"]:
                state = await bot.ask(turn["question"], conv, workspace_id=WORKSPACE, context=ctx)
                turns.append(_top(state, names))
        out.append(turns)
        print(f"{name}: {convo['id']}", file=sys.stderr)
    return out


def score(
    convos: list[dict[str, Any]], runs: dict[str, list[list[Any]]]
) -> dict[str, dict[str, float]]:
    """``doc@1`` and ``ref@5`` of each strategy over the follow-ups (all, answerable)."""
    table: dict[str, dict[str, float]] = {}
    for name, run in runs.items():
        rows: dict[str, list[tuple[float, float]]] = {"all": [], "answerable": []}
        for c, convo in enumerate(convos):
            for t, turn in enumerate(convo["turns"]):
                if not turn["follow_up"]:
                    continue
                top, ref = run[c][t], runs["reference"][c][t]
                doc1 = float(bool(top) and top[0][1] == convo["document"])
                ref_ids = {cid for cid, _ in ref}
                agree = len(ref_ids & {cid for cid, _ in top}) / max(1, len(ref_ids))
                rows["all"].append((doc1, agree))
                if turn["answerable"]:
                    rows["answerable"].append((doc1, agree))
        table[name] = {
            f"{metric} {part}": round(sum(r[i] for r in vals) / max(1, len(vals)), 3)
            for part, vals in rows.items()
            for i, metric in enumerate(("doc@1", "ref@5"))
        } | {"n": len(rows["all"])}
    return table


async def run(without: list[str]) -> dict[str, Any]:
    convos = [json.loads(line) for line in CONVERSATIONS.read_text().splitlines() if line]
    files = sorted(
        p for p in CORPUS.iterdir() if p.name != "README.md" and not p.name.endswith(".json")
    )
    async with open_assistant() as bot:
        for path in files:
            await ingest_documents(bot.services, WORKSPACE, load_path(path, max_bytes=10**8))
        names = {
            str(d["id"]): Path(str(d["source"])).name
            for d in await bot.services.db.documents.list_documents(WORKSPACE, limit=100)
        }
        strategies = ["reference", "lastturn", "convrag", *(f"without:{r}" for r in without)]
        runs = {name: await _strategy(bot, name, convos, names) for name in strategies}
    return {"scores": score(convos, runs), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--without", action="append", default=[], help="a rule to switch off")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    check_switches(args.without)
    result = asyncio.run(run(args.without))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    print("| strategy | doc@1 all | ref@5 all | doc@1 answerable | ref@5 answerable | n |")
    print("|---|---|---|---|---|---|")
    for name, s in result["scores"].items():
        print(
            f"| {name} | {s['doc@1 all']} | {s['ref@5 all']} | {s['doc@1 answerable']} "
            f"| {s['ref@5 answerable']} | {s['n']} |"
        )


if __name__ == "__main__":
    main()
