#!/usr/bin/env bash
# The way back, with real LangGraph: each committed Python fixture is
# imported (`agentstate import-langgraph`), written back as a SqliteSaver
# file (`agentstate export-langgraph`), and roundtrip.py reads both with
# LangGraph's own SqliteSaver: every checkpoint the same, and a graph
# resumed on each gives the same state.
#
#   bash testdata/langgraph/python/roundtrip.sh
#
# Needs Go, python3 (3.11+) and PyPI: it installs the pins of
# requirements.txt (plus pycryptodome, for the encrypted fixture) and
# langgraph 0.2.20 and 0.3.34 (for their files) into virtual environments in
# a temporary directory. VENV=dir reuses a virtual environment with the pins
# instead of making one (VENV02, VENV03 the same for the old releases).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/langgraph-roundtrip.XXXXXX")
trap 'rm -rf "$work"' EXIT
export LANGSMITH_TRACING=false LANGCHAIN_TRACING_V2=false PYTHONHASHSEED=0
export LANGGRAPH_AES_KEY=0123456789abcdef0123456789abcdef # the encrypted fixture's (generate.sh --compat)

venv() { # name, pip arguments...
	local dir="$work/$1"
	shift
	python3 -m venv "$dir"
	"$dir/bin/pip" install --quiet --disable-pip-version-check "$@"
	echo "$dir"
}
py=${VENV:-$(venv venv -r "$here/requirements.txt" pycryptodome==4.4.0)}
py02=${VENV02:-$(venv venv02 langgraph==0.2.20 langgraph-checkpoint==1.0.12 langgraph-checkpoint-sqlite==1.0.4 langchain-core==0.3.86)}
py03=${VENV03:-$(venv venv03 langgraph==0.3.34 langgraph-checkpoint==2.1.2 langgraph-checkpoint-sqlite==2.0.11 langchain-core==0.3.86)}

(cd "$repo" && go build -o "$work/agentstate" ./cmd/agentstate)

check() { # venv, fixture, roundtrip.py arguments...
	local env=$1 name=$2
	shift 2
	echo "== $name"
	"$work/agentstate" import-langgraph "$here/$name" "$work/$name.db"
	"$work/agentstate" export-langgraph "$work/$name.db" "$work/$name.out.sqlite"
	"$env/bin/python" "$here/roundtrip.py" --source "$here/$name" --exported "$work/$name.out.sqlite" "$@"
}
check "$py" langgraph-py.sqlite --resume chat
check "$py" langgraph-py-compat.sqlite --resume compat
check "$py" langgraph-py-encrypted.sqlite --resume compat --source-encrypted
check "$py02" langgraph-py-0.2.sqlite --resume compat
check "$py03" langgraph-py-0.3.sqlite --resume compat
echo "every fixture: the same checkpoints, and the same state resumed, after SqliteSaver -> agentstate -> SqliteSaver"
