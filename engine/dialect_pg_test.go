//go:build !js && !wasip1

package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The mechanical translation, on statements of the shapes the engine uses.
func TestPGRewrite(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`SELECT a FROM t WHERE x=? AND y=?`, `SELECT a FROM t WHERE x=$1 AND y=$2`},
		{`SELECT a FROM t WHERE x=?2 AND y=?1 AND z=?2`, `SELECT a FROM t WHERE x=$2 AND y=$1 AND z=$2`},
		{`SELECT :b, :a, :b`, `SELECT $1, $2, $1`},
		{`INSERT OR IGNORE INTO t(a) VALUES (?)`, `INSERT INTO t(a) VALUES ($1) ON CONFLICT DO NOTHING`},
		{`SELECT a FROM t INDEXED BY t_idx WHERE a=?`, `SELECT a FROM t WHERE a=$1`},
		{`SELECT 1 FROM t WHERE m.mode IS NOT 'delta'`, `SELECT 1 FROM t WHERE m.mode IS DISTINCT FROM 'delta'`},
		{`SELECT j.key FROM json_each(?) j CROSS JOIN b ON b.x = j.value->>0`,
			`SELECT j.key FROM (SELECT value, ordinality - 1 AS key FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY) j JOIN b ON b.x = j.value->>0`},
		{`SELECT 1 FROM t WHERE (?1 IS NULL OR x IN (SELECT value FROM json_each(?1)))`,
			`SELECT 1 FROM t WHERE ($1::jsonb IS NULL OR x IN (SELECT value FROM jsonb_array_elements_text($1::jsonb) AS value))`},
		{`SELECT 1 FROM t WHERE (?1 IS NULL OR s=?1) AND ?2 IS NULL`, `SELECT 1 FROM t WHERE ($1::text IS NULL OR s=$1) AND $2::text IS NULL`},
		{`SELECT 1 FROM t WHERE 1 AND a = :a LIMIT :n`, `SELECT 1 FROM t WHERE true AND a = $1 LIMIT nullif($2::bigint, -1)`},
		{`SELECT count(*) FROM (SELECT a FROM t)`, `SELECT count(*) FROM (SELECT a FROM t) AS counted`},
		{`UPDATE t SET d = x'01c1'`, `UPDATE t SET d = '\x01c1'::bytea`},
		{`SELECT agentstate_version(p.checkpoint, :ch) FROM c p WHERE p.id = :id`, `SELECT p.versions ->> $1 FROM c p WHERE p.id = $2`},
	} {
		got := pgRewrite(tc.in)
		if got.sql != tc.want {
			t.Errorf("%s\n got %s\nwant %s", tc.in, got.sql, tc.want)
		}
	}
	// Numbers the text never names are dropped, the rest renumbered.
	st := pgRewrite(`SELECT 1 FROM t WHERE a = ?1 LIMIT ?6 OFFSET ?7`)
	if st.sql != `SELECT 1 FROM t WHERE a = $1 LIMIT nullif($2::bigint, -1) OFFSET $3` {
		t.Fatalf("renumbered: %s", st.sql)
	}
	args, err := st.args([]any{"a", "b", "c", "d", "e", 6, 7})
	if err != nil || !cmp.Equal(args, []any{"a", 6, 7}) {
		t.Fatalf("args %v %v", args, err)
	}
}
