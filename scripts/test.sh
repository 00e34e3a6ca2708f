#!/usr/bin/env bash
# Install convrag with its dev dependencies and run the whole test suite, then the
# code checks. Usage: scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev
export LANGSMITH_TRACING=false LANGGRAPH_CLI_NO_ANALYTICS=1
.venv/bin/python -m pytest -q "$@"
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy src/convrag
