#!/usr/bin/env bash
# Install convrag with its dev dependencies and run the whole test suite, then the
# code checks. Usage: scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh dev

# apt_install WHY PACKAGE...: install Debian packages a test needs; on failure, say so
# (that test then fails or skips, naming the package) and go on.
apt_install() {
  local why="$1"
  shift
  echo "Installing Debian's $* (apt-get) $why"
  local apt_log
  apt_log="$(mktemp)"
  install_packages() {
    # Keep a configuration file that is already there (see createcluster.conf below).
    DEBIAN_FRONTEND=noninteractive UCF_FORCE_CONFFOLD=1 apt-get install -y -q \
      --no-install-recommends -o Dpkg::Options::=--force-confdef \
      -o Dpkg::Options::=--force-confold "$@" >>"$apt_log" 2>&1 </dev/null
  }
  # The package lists are refreshed only when the install fails (missing or stale).
  if ! install_packages "$@" && ! { apt-get update -q >>"$apt_log" 2>&1 </dev/null && install_packages "$@"; }; then
    echo "apt-get could not install them; its last lines:" >&2
    tail -n 20 "$apt_log" >&2
  fi
  rm -f "$apt_log"
}

# The chat page's browser test drives Debian's Chromium through its chromedriver
# (tests/api/test_chat_page.py); CONVRAG_SKIP_BROWSER=1 skips that test and this step.
if [ ! -x /usr/bin/chromedriver ] && [ "${CONVRAG_SKIP_BROWSER:-}" != 1 ]; then
  apt_install "for the chat page's browser test" chromium chromium-driver
fi
# The store tests also run on a PostgreSQL server, Debian's (tests/stores/conftest.py starts
# one of its own); the package must not create and start a cluster of its own.
# CONVRAG_SKIP_SERVER_POSTGRES=1 skips those tests and this step.
if ! compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null \
  && [ "${CONVRAG_SKIP_SERVER_POSTGRES:-}" != 1 ]; then
  if [ ! -e /etc/postgresql-common/createcluster.conf ] && mkdir -p /etc/postgresql-common 2>/dev/null; then
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
  fi
  apt_install "for the store tests on a PostgreSQL server" postgresql
fi
export LANGSMITH_TRACING=false LANGGRAPH_CLI_NO_ANALYTICS=1
# Two worker processes, each module's tests on one of them (its module-scoped servers are
# started once); CONVRAG_TEST_WORKERS=0 runs everything in this process.
workers="${CONVRAG_TEST_WORKERS:-2}"
xdist=()
if [ "$workers" != 0 ]; then
  xdist=(-n "$workers" --dist loadfile)
fi
.venv/bin/python -m pytest -q --durations=25 "${xdist[@]}" "$@"
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy src/convrag
