"""An LLM that rewrites as MTRAG's reference does: measures the service's LLM path offline.

``convrag eval mtrag -s convrag_llm`` runs the graph as the service does with an LLM
configured; no LLM runs on this machine, so this stub stands in for one: each rewrite
request gets MTRAG's ``rewrite_llm`` (written by Mixtral) for the turn it asks about,
found by the latest question and the history's last question in the prompt; a turn whose
reference is the question as asked is "standalone". Other requests get the stub's default
answer (a retrieval-only evaluation sends none).

Usage::

    python benchmarks/reference_rewriter.py ../shared/bench/mtrag/clapnq/turns.jsonl &
    # prints "reference rewriter on http://127.0.0.1:PORT/v1"
    LLM_MODEL=openai:stub-model OPENAI_API_KEY=stub OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 \\
        convrag eval mtrag --data ../shared/bench/mtrag --domain clapnq -s convrag_llm
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from convrag.testing.openai_stub import OpenAIStub, Reply, last_message_text, run_forever_cli

_LATEST = re.compile(r"^Latest user question: (.*)$", re.MULTILINE)
_USER = re.compile(r"^User: (.*)$", re.MULTILINE)

Key = tuple[str, str]


def _key(question: str, previous: str) -> Key:
    return " ".join(question.split()), " ".join(previous.split())


def load_rewrites(turns: Path) -> dict[Key, str]:
    """Each later turn's reference rewrite by (its question, the previous question)."""
    out: dict[Key, str] = {}
    for line in turns.read_text().splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        users = [h["text"] for h in row["history"] if h["speaker"] == "user"]
        if users:
            out[_key(row["question"], users[-1])] = row.get("rewrite_llm") or row["question"]
    return out


def is_rewrite(body: dict[str, Any]) -> bool:
    text = last_message_text(body)
    return '"classification"' in text and "Latest user question:" in text


def rewrite_reply(rewrites: dict[Key, str]) -> Any:
    """The reply function: the reference rewrite as the rewrite prompt's JSON verdict."""

    def reply(body: dict[str, Any]) -> str:
        text = last_message_text(body)
        latest = _LATEST.search(text)
        users = _USER.findall(text)
        question = latest.group(1).strip() if latest else ""
        query = rewrites.get(_key(question, users[-1] if users else ""), question)
        same = " ".join(query.split()).lower() == " ".join(question.split()).lower()
        kind = "standalone" if same else "follow_up"
        return json.dumps({"classification": kind, "query": query})

    return reply


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("turns", type=Path, help="an MTRAG domain's turns.jsonl")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    stub = OpenAIStub(port=args.port)
    stub.add_rule(is_rewrite, Reply(content=rewrite_reply(load_rewrites(args.turns))))
    run_forever_cli(stub, lambda s: f"reference rewriter on {s.root_url}/v1")


if __name__ == "__main__":
    main()
