"""Not found only when it is not there, on real documents: the reading sets' questions.

Every document of ``tests/documents/corpus`` and ``tests/documents/heldout`` goes into one
workspace (as a user's folder would). Each question their ``.expect.json`` lists is
asked in a new conversation, through the whole graph (no LLM unless one is configured):
an answerable question answered "not found" is a wrong abstention; an unanswerable one
(the document does not say, though it is on its subject) answered is a miss. Questions
from another subject entirely (MTRAG's ClapNQ first questions, when ``--offtopic`` names
a ``turns.jsonl``) must all be "not found".

    CONVRAG_DATA_DIR=/tmp/ra python benchmarks/reading_abstention.py \
        --offtopic ../shared/bench/mtrag/clapnq/turns.jsonl --out bench-out/abstention.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from convrag.assistant import open_assistant
from convrag.documents.load import load_path
from convrag.ingest import ingest_documents
from convrag.records import assurance_of

ROOT = Path(__file__).resolve().parent.parent
SETS = (ROOT / "tests/documents/corpus", ROOT / "tests/documents/heldout")
WORKSPACE = "reading-abstention"


def questions() -> tuple[list[Path], list[dict[str, Any]]]:
    """The sets' files, and their questions with the file each is about."""
    files: list[Path] = []
    asked: list[dict[str, Any]] = []
    for folder in SETS:
        for expect in sorted(folder.glob("*.expect.json")):
            stem = expect.name.removesuffix(".expect.json")
            (path,) = [p for p in folder.glob(f"{stem}.*") if p != expect]
            files.append(path)
            for q in json.loads(expect.read_text()).get("questions", []):
                asked.append({"file": path.name, "q": q["q"], "answerable": q["answerable"]})
    return files, asked


def offtopic(turns: Path | None, n: int = 30) -> list[dict[str, Any]]:
    """First questions of another subject's conversations: each must be "not found"."""
    if turns is None:
        return []
    rows = [json.loads(line) for line in turns.open() if line.strip()]
    first = [r["question"] for r in rows if int(r.get("turn") or 1) == 1][:n]
    return [{"file": None, "q": q, "answerable": False, "offtopic": True} for q in first]


async def run(off: Path | None) -> dict[str, Any]:
    files, asked = questions()
    asked += offtopic(off)
    async with open_assistant() as bot:
        for path in files:
            await ingest_documents(bot.services, WORKSPACE, load_path(path, max_bytes=10**8))
        for item in asked:
            conversation = await bot.new_conversation(WORKSPACE)
            state = await bot.ask(item["q"], conversation, workspace_id=WORKSPACE)
            flags = state.get("flags") or {}
            item["not_found"] = bool(flags.get("no_answer"))
            item["confidence"] = assurance_of(flags)
            item["signals"] = state.get("abstention_signals")
            item["answer"] = str(state.get("answer") or "")[:300]
    answerable = [a for a in asked if a["answerable"]]
    unanswerable = [a for a in asked if not a["answerable"] and not a.get("offtopic")]
    away = [a for a in asked if a.get("offtopic")]
    summary = {
        "answerable": len(answerable),
        "wrong_not_found": sum(a["not_found"] for a in answerable),
        "unanswerable": len(unanswerable),
        "unanswerable_not_found": sum(a["not_found"] for a in unanswerable),
        "offtopic": len(away),
        "offtopic_not_found": sum(a["not_found"] for a in away),
        "low_confidence": {
            "answerable": sum(a["confidence"] == "low" for a in answerable),
            "wrong_not_found": sum(a["confidence"] == "low" for a in answerable if a["not_found"]),
            "unanswerable": sum(a["confidence"] == "low" for a in unanswerable),
            "offtopic": sum(a["confidence"] == "low" for a in away),
        },
    }
    print(json.dumps(summary))
    return {"summary": summary, "questions": asked}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offtopic", type=Path, help="a turns.jsonl of another subject")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = asyncio.run(run(args.offtopic))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
