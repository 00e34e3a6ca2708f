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
elif [ ! -L .venv ] && compgen -G ".venv/.convrag-installed-*" >/dev/null; then
  # A virtual environment records its own path (its scripts' #! lines, the editable
  # install's path to src/): one moved or copied here with the repository still points at
  # the old place (or runs the old checkout's code), so it is made again here. A .venv
  # that is a link to another environment is left as it is.
  # -I: the environment's own install, whatever PYTHONPATH the caller runs with.
  installed="$(.venv/bin/python -I -c 'import os, convrag; print(os.path.realpath(convrag.__file__))' 2>/dev/null || true)"
  if [ "$installed" != "$(pwd -P)/src/convrag/__init__.py" ]; then
    old="${installed%/src/convrag/__init__.py}"
    echo "note: .venv was installed for ${old:-another directory} (moved or copied?);" \
      "making it again for $(pwd -P)" >&2
    "$PYTHON" -m venv --clear .venv
  fi
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
