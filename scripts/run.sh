#!/usr/bin/env bash
# Install, ingest the sample documents into workspace "demo", and start the service on
# embedded defaults (PostgreSQL + Milvus Lite under .convrag/, no API key, no docker).
# With --docs PATH, ingest your own folder (recursively) or file instead, into the
# workspace --workspace names (default: the folder's or file's name), through
# `convrag serve --docs`, which prints that workspace's key and the page's URL.
# Usage: scripts/run.sh [--docs PATH [--workspace NAME]] [--port 8000] [--host 127.0.0.1]
set -euo pipefail
docs="" workspace="" serve_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --docs|--workspace|-w)
      if [ $# -lt 2 ]; then echo "scripts/run.sh: $1 needs a value" >&2; exit 2; fi
      if [ "$1" = --docs ]; then docs="$2"; else workspace="$2"; fi
      shift 2 ;;
    --docs=*) docs="${1#--docs=}"; shift ;;
    --workspace=*) workspace="${1#--workspace=}"; shift ;;
    *) serve_args+=("$1"); shift ;;  # the rest passes through to `convrag serve`
  esac
done
if [ -n "$workspace" ] && [ -z "$docs" ]; then
  echo "scripts/run.sh: --workspace names the workspace of --docs: give --docs PATH with it" >&2
  exit 2
fi
# A relative PATH is the caller's: made absolute before the cd below.
if [ -n "$docs" ] && [ "${docs#/}" = "$docs" ]; then docs="$PWD/$docs"; fi
if [ -n "$workspace" ]; then serve_args=(--workspace "$workspace" ${serve_args[@]+"${serve_args[@]}"}); fi
cd "$(dirname "$0")/.."
say() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }
scripts/bootstrap.sh
export CONVRAG_DATA_DIR="${CONVRAG_DATA_DIR:-$PWD/.convrag}"
export LANGSMITH_TRACING=false LANGGRAPH_CLI_NO_ANALYTICS=1
mkdir -p "$CONVRAG_DATA_DIR"
if [ -n "$docs" ]; then
  say "starting the stores and reading $docs (embedding takes about a second per page)"
  # serve ingests PATH, keeps the key in $CONVRAG_DATA_DIR/NAME.key and prints it.
  exec .venv/bin/convrag serve --docs "$docs" ${serve_args[@]+"${serve_args[@]}"}
fi
say "starting the stores and ingesting the sample documents into workspace demo" \
  "(about 30 s the first time, a few seconds after)"
.venv/bin/convrag ingest src/convrag/sample_docs --workspace demo
keyfile="$CONVRAG_DATA_DIR/demo.key"
if [ ! -s "$keyfile" ]; then
  (umask 077 && .venv/bin/convrag keys create --workspace demo > "$keyfile")
fi
echo "demo workspace API key (also in $keyfile): $(cat "$keyfile")"
say "starting the service (about 10 s until it answers)"
exec .venv/bin/convrag serve ${serve_args[@]+"${serve_args[@]}"}
