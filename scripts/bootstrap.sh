#!/usr/bin/env bash
# Create .venv (if needed) and install convrag with pinned dependencies.
# Usage: scripts/bootstrap.sh [extras], e.g. scripts/bootstrap.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "convrag needs Python >= 3.11 (found: $("$PYTHON" --version 2>&1)); set PYTHON=..." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
extras="${1:-}"
target="."
[ -n "$extras" ] && target=".[$extras]"
stamp=".venv/.convrag-installed-${extras:-base}"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$target"
  touch "$stamp"
fi
