"""An LLM that rewrites as MTRAG's reference does, served for any command.

``convrag eval mtrag`` has it built in (the strategy ``convrag_llm_reference``,
:mod:`convrag.evaluation.reference_llm`); this script serves the same stand-in in its own
process, for commands that take an LLM from the environment, such as ``convrag eval
answers --llm`` (the "not found" decision on the LLM path; the stub drafts every answer as
one fixed sentence, so the answers' ROUGE-L means nothing there).

Usage::

    python benchmarks/reference_rewriter.py ../shared/bench/mtrag/clapnq &
    # prints "reference rewriter on http://127.0.0.1:PORT/v1"
    LLM_MODEL=openai:reference-rewriter OPENAI_API_KEY=stub \\
        OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 \\
        convrag eval answers --data ../shared/bench/mtrag --domain clapnq --llm
"""

from __future__ import annotations

import argparse
from pathlib import Path

from convrag.evaluation.mtrag import load_domain
from convrag.evaluation.reference_llm import reference_stub
from convrag.testing.openai_stub import run_forever_cli


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("domain", type=Path, help="an MTRAG domain's directory")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    turns, _ = load_domain(args.domain, judged_only=False)
    run_forever_cli(
        reference_stub(turns, port=args.port), lambda s: f"reference rewriter on {s.root_url}/v1"
    )


if __name__ == "__main__":
    main()
