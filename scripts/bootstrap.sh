#!/usr/bin/env bash
# Create .venv (if needed) and install convrag with pinned dependencies.
# Usage: scripts/bootstrap.sh [extras], e.g. scripts/bootstrap.sh dev
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
# say MESSAGE: one line of progress, with the time of day.
say() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
# still_working WHAT: pass a command's lines through, indented, and say that WHAT is still
# at work every 2 s without a line (pip is silent while it unpacks a large wheel).
still_working() {
  local line quiet=0
  while :; do
    if IFS= read -r -t 2 line; then
      printf '  %s\n' "$line"
      quiet=0
    elif [ $? -gt 128 ]; then
      quiet=$((quiet + 2))
      printf '  ... %s still at work (%d s since its last line)\n' "$1" "$quiet"
    else
      break
    fi
  done
}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "convrag needs Python >= 3.11 (found: $("$PYTHON" --version 2>&1)); set PYTHON=..." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  say "creating the virtual environment .venv (a few seconds)"
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
# with_uv ARGS: install ARGS into .venv with uv (measured: a cold install in 19 s against
# pip's 150 s, the same versions; BENCHMARKS.md), which pip installs into .venv first.
# uv reads no pip.conf: the system's certificates (UV_SYSTEM_CERTS) are the ones pip is given.
# --compile-bytecode, as pip does: without it each command compiled its libraries again
# (8 s of `convrag ask`) wherever PYTHONDONTWRITEBYTECODE is set, as in many containers.
with_uv() {
  { [ -x .venv/bin/uv ] || .venv/bin/python -m pip install --quiet --disable-pip-version-check uv; } &&
    UV_SYSTEM_CERTS="${UV_SYSTEM_CERTS:-1}" .venv/bin/uv pip install --compile-bytecode --python .venv/bin/python "$@"
}
# with_pip ARGS: the same with pip, when uv cannot be had or fails.
with_pip() {
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off "$@"
}
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing convrag${extras:+ with [$extras]} and its dependencies into .venv" \
    "(about 20 s with uv on a machine that has none of them, 2-3 minutes if pip must do it)"
  started=$SECONDS
  if ! with_uv -e "$target" 2>&1 | still_working uv; then
    say "uv could not install them (its lines above); installing with pip instead"
    with_pip -e "$target" 2>&1 \
      | { grep --line-buffered -v '^Requirement already satisfied' || true; } | still_working pip
  fi
  touch "$stamp"
  say "installed in $((SECONDS - started)) s"
fi
