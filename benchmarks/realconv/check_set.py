"""Check a conversation set against its documents as the service reads them.

    PYTHONPATH=src python benchmarks/realconv/check_set.py benchmarks/realconv/dev

Every document of ``docs/`` is read with convrag's reader (``load_path``); every turn
must be well formed (``convrag.evaluation.conversations.load_set``), name a document of
the set, and each of its key facts must occur in that document's text after the
evaluation's own normalisation (NFKC, case-folded, whitespace collapsed). Prints the
set's size, its turns by kind and each problem; exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from convrag.documents.load import load_path
from convrag.evaluation.conversations import fact_in, load_set, set_documents


def problems(folder: Path) -> tuple[list[str], Counter[str], int]:
    """Each problem of the set in ``folder``, its turns by kind, and its documents."""
    texts = {
        p.name: "\n\n".join(d.text for d in load_path(p, max_bytes=10**8))
        for p in set_documents(folder)
    }
    kinds: Counter[str] = Counter()
    found: list[str] = []
    for conversation in load_set(folder):
        if not 3 <= len(conversation.turns) <= 7:
            found.append(f"{conversation.id}: {len(conversation.turns)} turns (3-7 expected)")
        for i, turn in enumerate(conversation.turns, 1):
            kinds[turn.kind] += 1
            where = f"{conversation.id} turn {i}"
            if turn.follow_up != (i > 1):
                found.append(f"{where}: follow_up must be true exactly after the first turn")
            if turn.kind == "underspecified" and len(turn.readings) < 2:
                found.append(f"{where}: an underspecified turn lists 2-3 readings")
            if not turn.scored:
                continue
            text = texts.get(turn.document or "")
            if text is None:
                found.append(f"{where}: no document {turn.document!r} in docs/")
                continue
            found += [
                f"{where}: key fact not in {turn.document}: {fact!r}"
                for fact in turn.key_facts
                if not fact_in(fact, text)
            ]
    return found, kinds, len(texts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the set: docs/ and conversations.jsonl")
    folder = parser.parse_args().folder
    found, kinds, n_docs = problems(folder)
    print(f"{n_docs} documents, {sum(kinds.values())} turns: {dict(sorted(kinds.items()))}")
    for line in found:
        print(line)
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
