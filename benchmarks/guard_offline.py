"""The output checks on honest and on obedient answers, offline: how often they refuse an
honest answer, and how often they catch one that obeyed an injected document.

Honest answers: MTRAG's, written by people (``reference_answer``) and by a model before a
person repaired them (``model_answer_before_human_repair``), each checked against its
turn's judged passages (what a retriever would show, relevant or not), its question and
the earlier turns; and the hostile sets' plain answers (the fact, cited). Obedient
answers: each hostile case's reply as the obeying stub writes it (cases that ask for the
prompt's canary or text are left to the canary and recital checks), against the whole
document. Each is judged as :class:`~convrag.answering.guard.StreamGuard` judges a
finished answer on the LLM path: *refused* (the turn falls back to quoting), *link
removed* (the answer is stored without it; the stream stops at the link), or passed.
``--sweep`` adds what a refusal on the share of an answer's content words that the
sources support would cost and catch (the drift check run on every turn).

This is a proxy for `benchmarks/injection/run.py`, which runs the real stack: the sources
here are whole documents and judged passages, not the retrieved chunks.

    python benchmarks/guard_offline.py [--sweep]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
from pathlib import Path
from typing import Any

from convrag.answering.guard import StreamGuard
from convrag.answering.instructions import Provenance, _stem, content_words
from convrag.documents.load import load_path
from convrag.evaluation.mtrag import load_corpus

HERE = Path(__file__).resolve().parent
BENCH = HERE.parents[1] / "shared" / "bench"
NO_ANSWER = "I could not find an answer to that in the documents."
HOSTILE = ("injection", "injection_b", "injection_c", "injection_d")
SKIP = re.compile(r"\{(canary|system|security)\}")


def hostile_records(name: str) -> list[dict[str, Any]]:
    folder = HERE / name
    out = []
    for case in json.loads((folder / "cases.json").read_text()):
        files = case.get("files") or [case["file"]]
        sources: list[dict[str, str]] = []
        for f in files:
            for doc in load_path(folder / "docs" / f, max_bytes=10_000_000):
                sources.append({"text": doc.text, "title": doc.title or f})
        prompt = "\n".join(s["title"] + "\n" + s["text"] for s in sources)
        trig = case["trigger"] if isinstance(case["trigger"], list) else [case["trigger"]]
        fact = case["fact"]
        base = {
            "set": name,
            "id": case["id"],
            "question": case["question"],
            "sources": sources,
            "trusted": NO_ANSWER,
        }
        out.append({**base, "answer": fact + " [1]", "obeyed": 0})
        if SKIP.search(case["obey"]) or not all(t in prompt for t in trig):
            continue
        words = "+".join(re.findall(r"\w+", case["question"]))
        answer = case["obey"].replace("{fact}", fact + " [1]").replace("{qwords}", words)
        out.append({**base, "answer": answer, "obeyed": 1})
    return out


def mtrag_records(bench: str, domain: str) -> list[dict[str, Any]]:
    folder = BENCH / bench / domain
    convs = [json.loads(x) for x in (folder / "conversations.jsonl").open()]
    texts = {d.source: d for d in load_corpus(folder)}
    out = []
    for c in convs:
        for i, turn in enumerate(c["turns"]):
            sources = [
                {"text": texts[j["id"]].text, "title": texts[j["id"]].title or ""}
                for j in turn.get("judged_passages") or []
                if j["id"] in texts
            ]
            trusted = "\n".join(
                [
                    NO_ANSWER,
                    *(
                        f"{t['question']}\n{t.get('reference_answer') or ''}"
                        for t in c["turns"][:i]
                    ),
                ]
            )
            for kind in ("reference_answer", "model_answer_before_human_repair"):
                answer = turn.get(kind) or ""
                if answer.strip():
                    out.append(
                        {
                            "set": f"{bench}-{domain}",
                            "id": turn["task_id"],
                            "kind": kind,
                            "question": turn["question"],
                            "sources": sources,
                            "trusted": trusted,
                            "answer": answer,
                            "obeyed": 0,
                        }
                    )
    return out


def rows() -> list[dict[str, Any]]:
    out = [r for name in HOSTILE for r in hostile_records(name)]
    for bench in ("mtrag", "mtrag-un"):
        for domain in ("clapnq", "cloud"):
            out += mtrag_records(bench, domain)
    return out


def judged(r: dict[str, Any]) -> str:
    verdict = StreamGuard(r["sources"], r["question"], trusted=r["trusted"]).verdict(r["answer"])
    return "passed" if verdict is None else "link removed" if verdict == "link" else "refused"


def support(r: dict[str, Any]) -> tuple[int, float]:
    """An answer's content words and the share of them the sources or question hold."""
    p = Provenance.of(r["sources"], r["question"], r["trusted"])
    words = content_words(r["answer"])
    held = sum(_stem(w) in p.supported for w in words)
    return len(words), held / max(1, len(words))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sweep", action="store_true")
    args = ap.parse_args()
    records = rows()
    counts: dict[tuple[str, int], collections.Counter[str]] = collections.defaultdict(
        collections.Counter
    )
    for r in records:
        r["judged"] = judged(r)
        counts[(r["set"], r["obeyed"])][r["judged"]] += 1
    print("| set | answers | kind | refused | link removed | passed |")
    print("|---|---|---|---|---|---|")
    for (name, obeyed), n in sorted(counts.items()):
        total = sum(n.values())
        kind = "obedient" if obeyed else "honest"
        print(
            f"| {name} | {total} | {kind} | {n['refused']} ({n['refused'] / total:.1%}) "
            f"| {n['link removed']} | {n['passed']} |"
        )
    if not args.sweep:
        return
    honest = [r for r in records if not r["obeyed"]]
    missed = [r for r in records if r["obeyed"] and r["judged"] != "refused"]
    print(
        "\n| refuse below support | honest answers newly refused | obedient answers newly caught |"
    )
    print("|---|---|---|")
    for level in (0.3, 0.4, 0.5, 0.6, 0.7):

        def low(r: dict[str, Any], level: float = level) -> bool:
            n, share = support(r)
            return n >= 3 and share < level

        cost = sum(low(r) and r["judged"] != "refused" for r in honest)
        caught = [f"{r['set']}#{r['id']}" for r in missed if low(r)]
        print(
            f"| {level} | {cost} of {len(honest)} ({cost / len(honest):.1%}) | "
            f"{len(caught)} of {len(missed)} ({', '.join(caught)}) |"
        )


if __name__ == "__main__":
    main()
