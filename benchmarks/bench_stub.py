"""The suite's LLM: ``convrag.testing.openai_stub`` answering at once, in its own process.

* A rewrite request (the rewrite gate's JSON prompt) gets a valid JSON verdict with a
  plausible standalone question: the latest question followed by the first question of
  the history, so follow-up retrieval runs on a query of realistic length.
* Every other request gets a short answer that cites ``[1]`` and names no entity, so the
  repetition check never triggers a regeneration and each turn makes the same LLM calls.

Usage: ``python benchmarks/bench_stub.py --port 0`` prints
``OpenAIStub listening on http://127.0.0.1:PORT/v1`` once ready; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any

from convrag.testing.openai_stub import (
    OpenAIStub,
    Reply,
    last_message_text,
    run_forever_cli,
)

ANSWER = "The sources cover this question; see passage [1] for the details."
_LATEST = re.compile(r"Latest user question: (.*)")
_FIRST_USER = re.compile(r"^User: (.*)$", re.MULTILINE)


def is_rewrite(body: dict[str, Any]) -> bool:
    return '"classification"' in last_message_text(body) and "Latest user question:" in (
        last_message_text(body)
    )


def rewrite_reply(body: dict[str, Any]) -> str:
    text = last_message_text(body)
    latest = _LATEST.search(text)
    first = _FIRST_USER.search(text)
    question = latest.group(1).strip() if latest else "the question"
    query = f"{question} ({first.group(1).strip()})" if first else question
    return json.dumps({"classification": "follow_up", "query": query})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--token-delay",
        type=float,
        default=0.0,
        help="seconds between streamed answer chunks (a slower LLM)",
    )
    args = parser.parse_args()
    stub = OpenAIStub(
        Reply(content=ANSWER, token_delay_s=args.token_delay), host=args.host, port=args.port
    )
    stub.add_rule(is_rewrite, Reply(content=rewrite_reply))
    # The stub keeps every request for tests; a benchmark sends thousands: forget them.
    stub.requests = _Forgetful()
    stub.request_headers = _Forgetful()
    run_forever_cli(stub, lambda s: f"OpenAIStub listening on {s.root_url}/v1")


class _Forgetful(list[Any]):
    def append(self, item: Any) -> None:
        return None


if __name__ == "__main__":
    main()
