"""Check the second held-back real-document conversation set (test2): its format, and
that every key fact occurs verbatim in its document as convrag reads it.

    PYTHONPATH=src .venv/bin/python benchmarks/realconv/test2/check_facts.py

Both sides are normalised the same way (Unicode NFKC, casefold, whitespace collapsed)
before the substring test. Prints each problem and exits 1 if there is any. It only
reads the documents; it does not run the service and looks at no answers.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

from convrag.documents.load import load_path

HERE = Path(__file__).resolve().parent
DOCS = HERE / "docs"
CONVERSATIONS = HERE / "conversations.jsonl"
MAX_BYTES = 20 * 1024 * 1024
KINDS = {
    "first",
    "pronoun",
    "ellipsis",
    "what_about",
    "subjectless",
    "compare",
    "topic_change",
    "underspecified",
    "unanswerable",
    "off_topic",
}
FIELDS = [
    "question",
    "standalone",
    "follow_up",
    "kind",
    "answerable",
    "document",
    "section",
    "key_facts",
    "readings",
]


def normalise(text: str) -> str:
    """NFKC, casefolded, every run of whitespace one space."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text).casefold()).strip()


def document_texts() -> dict[str, str]:
    """Each file under docs/ by name, its text as convrag's reader gives it, normalised."""
    texts = {}
    for path in sorted(DOCS.iterdir()):
        docs = load_path(path, max_bytes=MAX_BYTES)
        texts[path.name] = normalise("\n\n".join(d.text for d in docs))
    return texts


def turn_problems(where: str, index: int, turn: dict, texts: dict[str, str]) -> list[str]:
    """What is wrong with one turn (an empty list when nothing is)."""
    out = []
    if list(turn) != FIELDS:
        out.append(f"{where}: fields {list(turn)} are not {FIELDS}")
        return out
    kind, doc, facts = turn["kind"], turn["document"], turn["key_facts"]
    if kind not in KINDS:
        out.append(f"{where}: unknown kind {kind!r}")
    if turn["follow_up"] != (index > 0):
        out.append(f"{where}: follow_up must be false only on the first turn")
    if index > 0 and kind == "first":
        out.append(f"{where}: kind 'first' on a later turn")
    if index == 0 and kind not in ("first", "off_topic", "unanswerable", "underspecified"):
        out.append(f"{where}: a first turn of kind {kind!r}")
    if doc is not None and doc not in texts:
        out.append(f"{where}: document {doc!r} is not in docs/")
    if turn["answerable"]:
        if kind in ("unanswerable", "off_topic", "underspecified"):
            out.append(f"{where}: kind {kind!r} marked answerable")
        if doc is None or not 1 <= len(facts) <= 3:
            out.append(f"{where}: an answerable turn needs a document and 1-3 key facts")
    elif facts:
        out.append(f"{where}: key facts on a turn that is not answerable")
    if (kind == "underspecified") != bool(turn["readings"]):
        out.append(f"{where}: readings belong to (and only to) underspecified turns")
    if kind == "off_topic" and doc is not None:
        out.append(f"{where}: an off-topic turn names a document")
    if doc in texts:
        for fact in facts:
            if normalise(fact) not in texts[doc]:
                out.append(f"{where}: key fact not in {doc}: {fact!r}")
    return out


def main() -> int:
    texts = document_texts()
    problems: list[str] = []
    ids: set[str] = set()
    turns = 0
    for lineno, line in enumerate(CONVERSATIONS.read_text(encoding="utf-8").splitlines(), 1):
        conv = json.loads(line)
        if conv["id"] in ids:
            problems.append(f"line {lineno}: id {conv['id']!r} repeats")
        ids.add(conv["id"])
        if not 3 <= len(conv["turns"]) <= 7:
            problems.append(f"{conv['id']}: {len(conv['turns'])} turns, not 3-7")
        for i, turn in enumerate(conv["turns"]):
            turns += 1
            problems.extend(turn_problems(f"{conv['id']} turn {i + 1}", i, turn, texts))
    for problem in problems:
        print(problem)
    print(
        f"{len(ids)} conversations, {turns} turns, {len(texts)} documents: "
        f"{len(problems)} problem(s)"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
