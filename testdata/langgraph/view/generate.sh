#!/usr/bin/env bash
# Rewrites the view fixtures of cmd/agentstate TestStateAsLangGraph: one
# agentstate file per LangGraph version, written by real graphs through
# agentstate's savers, and that LangGraph's own get_state of every
# checkpoint. CI does not run it (the committed files are the fixture; a
# run takes about 30 s once the engine module is compiled).
#
#   AGENTSTATE_WASM=.../agentstate-reactor.wasm AGENTSTATE_NPM_DIR=.../wasm/npm \
#     bash generate.sh VENV [VENV...]
#
# Each VENV holds langgraph (1.2.9 and 1.2.24 were used) and this
# repository's python package; AGENTSTATE_NPM_DIR is the npm package with
# its node_modules installed (@langchain/langgraph 1.7.3 was used).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${AGENTSTATE_WASM:?set AGENTSTATE_WASM to the engine module}"
: "${AGENTSTATE_NPM_DIR:?set AGENTSTATE_NPM_DIR to wasm/npm (npm ci done)}"
for venv in "$@"; do
  "$venv/bin/python" "$here/generate_py.py" "$here"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The script must resolve @langchain/langgraph to the npm package's copy,
# the one AgentStateSaver uses.
ln -s "$(cd "$AGENTSTATE_NPM_DIR" && pwd)/node_modules" "$tmp/node_modules"
cp "$here/generate_js.mjs" "$tmp/"
(cd "$tmp" && node generate_js.mjs "$(cd "$AGENTSTATE_NPM_DIR" && pwd)" "$here")
rm -f "$here"/*.db-wal "$here"/*.db-shm
