#!/usr/bin/env bash
# Install, ingest the sample documents into workspace "demo", and start the service on
# embedded defaults (PostgreSQL + Milvus Lite under .convrag/, no API key, no docker).
# Usage: scripts/run.sh [--port 8000] [--host 127.0.0.1]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export CONVRAG_DATA_DIR="${CONVRAG_DATA_DIR:-$PWD/.convrag}"
export LANGSMITH_TRACING=false LANGGRAPH_CLI_NO_ANALYTICS=1
mkdir -p "$CONVRAG_DATA_DIR"
.venv/bin/convrag ingest src/convrag/sample_docs --workspace demo
keyfile="$CONVRAG_DATA_DIR/demo.key"
if [ ! -s "$keyfile" ]; then
  (umask 077 && .venv/bin/convrag keys create --workspace demo > "$keyfile")
fi
echo "demo workspace API key (also in $keyfile): $(cat "$keyfile")"
exec .venv/bin/convrag serve "$@"
