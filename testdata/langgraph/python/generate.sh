#!/usr/bin/env bash
# Regenerates the LangGraph Python fixtures in this directory:
#
#   langgraph-py.sqlite          SqliteSaver file
#   langgraph-py-postgres.sql    pg_dump (plain SQL) of the PostgresSaver tables
#   expected-py-sqlite.json      every checkpoint as LangGraph reads it back
#   expected-py-postgres.json    the same for the PostgresSaver database
#
# and checks them with check_formats.py (FORMATS.md's reading, without LangGraph).
#
#   bash generate.sh               # needs python3 (3.11+), PyPI, PostgreSQL 15 binaries
#   bash generate.sh --bench 10000 # only a large SqliteSaver file; prints its path
#   bash generate.sh --compat      # only the compatibility files (compat.py)
#
# It installs the pins of requirements.txt into a virtual environment in a
# temporary directory, starts a throwaway PostgreSQL cluster there (127.0.0.1,
# a free port, trust auth), runs generate.py, dumps the saver's tables and
# removes everything it made. CI does not run this; it uses the committed files.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/langgraph-py-fixture.XXXXXX")
chmod 755 "$work"
pgbin=$(pg_config --bindir 2>/dev/null || echo /usr/lib/postgresql/15/bin)
pgdata="$work/pgdata"
pg_started=

# initdb and postgres refuse to run as root: as root, the cluster belongs to
# the postgres user.
as_pg=()
if [ "$(id -u)" = 0 ]; then
	as_pg=(runuser -u postgres --)
fi

cleanup() {
	if [ -n "$pg_started" ]; then
		"${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
"$work/venv/bin/pip" check

# No tracing, no network; a fixed hash seed keeps set orders (and so the
# stored bytes of sets) the same from run to run.
export LANGSMITH_TRACING=false LANGCHAIN_TRACING_V2=false PYTHONHASHSEED=0

# --compat: the small files of other releases and shapes (compat.py), each
# release in its own virtual environment: langgraph 0.2.20 and 0.3.34 (with
# the checkpoint packages and langchain-core pip resolved for them when the
# files were made, pinned), the pins above, and the pins again with
# EncryptedSerializer (AES, a fixed test key).
if [ "${1:-}" = --compat ]; then
	"$work/venv/bin/pip" install --quiet --disable-pip-version-check pycryptodome==4.4.0
	for rel in 0.2:langgraph==0.2.20,langgraph-checkpoint==1.0.12,langgraph-checkpoint-sqlite==1.0.4,langchain-core==0.3.86 \
		0.3:langgraph==0.3.34,langgraph-checkpoint==2.1.2,langgraph-checkpoint-sqlite==2.0.11,langchain-core==0.3.86; do
		python3 -m venv "$work/venv-${rel%%:*}"
		"$work/venv-${rel%%:*}/bin/pip" install --quiet --disable-pip-version-check $(echo "${rel#*:}" | tr , ' ')
		"$work/venv-${rel%%:*}/bin/python" "$here/compat.py" --out "$here/langgraph-py-${rel%%:*}.sqlite" --expected "$here/expected-py-${rel%%:*}.json"
	done
	"$work/venv/bin/python" "$here/compat.py" --out "$here/langgraph-py-compat.sqlite" --expected "$here/expected-py-compat.json"
	LANGGRAPH_AES_KEY=0123456789abcdef0123456789abcdef "$work/venv/bin/python" "$here/compat.py" --encrypt \
		--out "$here/langgraph-py-encrypted.sqlite" --expected "$here/expected-py-encrypted.json"
	exit 0
fi

if [ "${1:-}" = --bench ]; then
	"$work/venv/bin/python" "$here/generate.py" --bench "${2:-10000}"
	exit 0
fi

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$pgdata" "$work/sock"
if [ ${#as_pg[@]} -gt 0 ]; then
	chown postgres "$pgdata" "$work/sock"
fi
"${as_pg[@]}" "$pgbin/initdb" -D "$pgdata" -U postgres -A trust -E UTF8 --no-locale >/dev/null
"${as_pg[@]}" "$pgbin/pg_ctl" -D "$pgdata" -l "$work/sock/postgres.log" -w \
	-o "-c listen_addresses=127.0.0.1 -p $port -k $work/sock -c fsync=off" start >/dev/null
pg_started=1
"$pgbin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE langgraph"
url="postgresql://postgres@127.0.0.1:$port/langgraph"

"$work/venv/bin/python" "$here/generate.py" \
	--sqlite "$here/langgraph-py.sqlite" --expected-sqlite "$here/expected-py-sqlite.json" \
	--postgres "$url" --expected-postgres "$here/expected-py-postgres.json"

# Only the saver's tables. pg_dump 15.14+ brackets the script with
# \restrict/\unrestrict and a random key; the lines are dropped so that the
# file is the same for the same data and any psql restores it.
"$pgbin/pg_dump" -h 127.0.0.1 -p "$port" -U postgres --no-owner --no-privileges \
	-t public.checkpoint_migrations -t public.checkpoints -t public.checkpoint_blobs -t public.checkpoint_writes \
	langgraph | grep -v -E '^\\(un)?restrict ' >"$here/langgraph-py-postgres.sql"
echo "wrote $here/langgraph-py-postgres.sql ($(wc -c <"$here/langgraph-py-postgres.sql") bytes)"

# The dump must restore into an empty database and hold what was written.
"$pgbin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "CREATE DATABASE restored"
"$pgbin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d restored -v ON_ERROR_STOP=1 -f "$here/langgraph-py-postgres.sql" >/dev/null
for t in checkpoints checkpoint_blobs checkpoint_writes checkpoint_migrations; do
	a=$("$pgbin/psql" -At -h 127.0.0.1 -p "$port" -U postgres -d langgraph -c "SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM $t t")
	b=$("$pgbin/psql" -At -h 127.0.0.1 -p "$port" -U postgres -d restored -c "SELECT md5(string_agg(t::text, ',' ORDER BY t::text)) FROM $t t")
	if [ "$a" != "$b" ]; then
		echo "restored $t differs from the original" >&2
		exit 1
	fi
done
echo "the dump restores to the same rows"

# FORMATS.md, read without LangGraph, must give what LangGraph read.
"$work/venv/bin/python" "$here/check_formats.py" \
	--sqlite "$here/langgraph-py.sqlite" --expected-sqlite "$here/expected-py-sqlite.json" \
	--postgres "postgresql://postgres@127.0.0.1:$port/restored" --expected-postgres "$here/expected-py-postgres.json"
