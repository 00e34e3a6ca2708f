#!/usr/bin/env bash
# Install convrag with its dev dependencies and run the whole test suite, then the
# code checks. Usage: scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev
# The chat page's browser test drives Debian's Chromium through its chromedriver
# (tests/api/test_chat_page.py); CONVRAG_SKIP_BROWSER=1 skips that test and this step.
if [ ! -x /usr/bin/chromedriver ] && [ "${CONVRAG_SKIP_BROWSER:-}" != 1 ]; then
  echo "Installing Debian's chromium and chromium-driver (apt-get) for the chat page's browser test"
  apt_log="$(mktemp)"
  install_browser() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      chromium chromium-driver >>"$apt_log" 2>&1 </dev/null
  }
  # The package lists are refreshed only when the install fails (missing or stale).
  if ! install_browser && ! { apt-get update -q >>"$apt_log" 2>&1 </dev/null && install_browser; }; then
    echo "apt-get could not install them (the browser test will fail); its last lines:" >&2
    tail -n 20 "$apt_log" >&2
  fi
  rm -f "$apt_log"
fi
export LANGSMITH_TRACING=false LANGGRAPH_CLI_NO_ANALYTICS=1
.venv/bin/python -m pytest -q "$@"
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy src/convrag
