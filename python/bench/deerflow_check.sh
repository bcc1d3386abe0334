#!/bin/sh
# Runs DeerFlow's own backend tests for its run, event and thread-metadata
# stores against agentstate's DeerFlow classes (docs/deerflow.md §5),
# without editing a test body: deerflow_subst.py, loaded as a pytest
# plugin, replaces DeerFlow's store classes before the tests import them.
# Prints the pass count of each file, with the substitution and, for
# comparison, without it (AGENTSTATE_SUBST=none).
#
#   python/bench/deerflow_check.sh DEERFLOW_CHECKOUT [PYTHON]
#
# DEERFLOW_CHECKOUT: a checkout of github.com/bytedance/deer-flow (this
# script fetches nothing). PYTHON: a Python 3.12 with DeerFlow's test
# dependencies at its backend/uv.lock versions; these 17 suffice for the
# files below (pip pulls ~60 more in as their dependencies):
#   pytest==9.0.3 pytest-asyncio==1.3.0 SQLAlchemy==2.0.49 aiosqlite==0.22.1
#   alembic==1.18.4 greenlet==3.4.0 langgraph==1.2.9 langchain==1.3.14
#   langchain-openai==1.2.1 pydantic==2.13.3 PyYAML==6.0.3 httpx==0.28.1
#   python-dotenv==1.2.2 cryptography==50.0.0 mcp==1.28.1 asyncpg==0.31.0
# plus this package's wasmtime and apsw. The package itself is taken from
# this checkout (src/), the engine from $AGENTSTATE_WASM.
# FILES (space-separated test file names) narrows the run.
set -eu
df=${1:?usage: deerflow_check.sh DEERFLOW_CHECKOUT [PYTHON]}
py=${2:-python3.12}
here=$(cd "$(dirname "$0")" && pwd)
df=$(cd "$df" && pwd)
: "${AGENTSTATE_WASM:?set AGENTSTATE_WASM to the engine module (agentstate-reactor.wasm)}"
export AGENTSTATE_WASM
export PYTHONPATH="$here:$here/../src:$df/backend/packages/harness:$df/backend/packages/extension-api${PYTHONPATH:+:$PYTHONPATH}"
files=${FILES:-"test_run_event_store test_run_event_store_filter test_run_event_store_pagination test_run_event_store_by_run_index test_run_repository test_thread_meta_repo test_memory_thread_meta_isolation"}
cd "$df/backend"
count() {
	"$py" -m pytest -q -p no:cacheprovider -p deerflow_subst "tests/$1.py" 2>&1 | tail -n 1
}
for f in $files; do
	ours=$(count "$f")
	theirs=$(AGENTSTATE_SUBST=none count "$f")
	printf '%-36s agentstate: %-40s deerflow: %s\n' "$f" "$ours" "$theirs"
done
if [ -n "${VERBOSE:-}" ]; then
	for f in $files; do
		"$py" -m pytest -q -p no:cacheprovider -p deerflow_subst "tests/$f.py" 2>&1 | grep -E '^FAILED' || true
	done
fi
