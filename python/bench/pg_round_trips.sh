#!/usr/bin/env bash
# Round trips per turn of the chat graph (bench/langgraph_bench.py's) on
# AgentStateSaver over a postgresql:// URL and on LangGraph's PostgresSaver:
# the client's sendto() calls while 50 turns run, counted with strace (libpq
# sends once per flush, so one per round trip). Needs AGENTSTATE_TEST_PG and
# strace:
#
#   AGENTSTATE_TEST_PG=postgres://... bash bench/pg_round_trips.sh [TURNS]
set -euo pipefail
cd "$(dirname "$0")"
turns=${1:-50}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/run.py" <<'PY'
import os, sys, uuid
sys.path.insert(0, os.getcwd())
import langgraph_pg_bench as b
from langgraph_bench import drive, graph
kind, n = sys.argv[1], int(sys.argv[2])
url = os.environ["AGENTSTATE_TEST_PG"]
name = "rt_" + uuid.uuid4().hex[:8]
b.admin(url, f"CREATE SCHEMA {name}")
try:
    s, close = b.open_saver(kind, url, name)
    g = graph(s, "default", 10)
    drive(g, "warm", 10)
    os.write(2, b"MARK\n")
    drive(g, "t", n)
    os.write(2, b"END\n")
    close()
finally:
    b.admin(url, f"DROP SCHEMA {name} CASCADE")
PY
for kind in agentstate postgres; do
  strace -f -e trace=sendto,write -o "$tmp/$kind.txt" python "$tmp/run.py" "$kind" "$turns" >/dev/null 2>&1
  sends=$(awk '/write\(2, "MARK/{on=1; next} /write\(2, "END/{exit} on && /sendto\(/ && !/resumed/ {n++} END {print n+0}' "$tmp/$kind.txt")
  echo "$kind: $(python -c "print(round($sends / $turns, 2))") round trips per turn"
done
