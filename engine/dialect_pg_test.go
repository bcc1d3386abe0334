//go:build !js && !wasip1

package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/codec"

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
		{`SELECT j.key FROM json_each(?) j CROSS JOIN blobs b ON b.x = j.value->>0 ORDER BY j.key`,
			`SELECT j.key FROM (SELECT value, ordinality - 1 AS key FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY) j CROSS JOIN LATERAL (SELECT * FROM blobs b WHERE b.x = j.value->>0 OFFSET 0) b ORDER BY j.key`},
		{`SELECT 1 FROM t WHERE (?1 IS NULL OR x IN (SELECT value FROM json_each(?1)))`,
			`SELECT 1 FROM t WHERE ($1::jsonb IS NULL OR x IN (SELECT value FROM (SELECT v COLLATE "C" AS value FROM jsonb_array_elements_text($1::jsonb) v) AS json_each))`},
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
	// Two joins, each ending at its WHERE.
	got := pgRewrite("WITH RECURSIVE link(v) AS (SELECT 1 UNION SELECT b.base FROM link CROSS JOIN blobs b\n  ON b.version = link.v\n\tWHERE b.enc = 2)\nSELECT b.data FROM link\nCROSS JOIN blobs b ON b.version = link.v\nWHERE link.v IS NOT ?1").sql
	want := "WITH RECURSIVE link(v) AS (SELECT 1 UNION SELECT b.base FROM link CROSS JOIN LATERAL (SELECT * FROM blobs b WHERE b.version = link.v OFFSET 0) b\n\tWHERE b.enc = 2)\nSELECT b.data FROM link\nCROSS JOIN LATERAL (SELECT * FROM blobs b WHERE b.version = link.v OFFSET 0) b\nWHERE link.v IS DISTINCT FROM $1"
	if got != want {
		t.Errorf("two joins:\n got %s\nwant %s", got, want)
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

// The filters evaluated in PostgreSQL (agentstate_match over typed JSON)
// agree with the Go filters (recFilter.match over msgpack) on random values
// and filters built from them: equal and nearby numbers of both kinds,
// large unsigned integers, NaN and infinities, strings that jsonb cannot
// hold, lists, nested and "$" keys, missing fields, every operator, strict
// and loose equality.
// filterRounds is the number of comparisons (ten times more with
// AGENTSTATE_SOAK).
var filterRounds = relScale(4000, 2000, 40000)

func TestPGFiltersMatchGo(t *testing.T) {
	if !onPG() {
		t.Skip("compares PostgreSQL's filter functions with Go's; runs in the postgres half")
	}
	db := openTest(t, Memory, nil)
	ctx := context.Background()
	seed := relSeed(t)
	rng := rand.New(rand.NewPCG(seed, 7))
	scalars := []any{nil, true, false, int64(0), int64(1), int64(-1), int64(3), int64(1 << 53), int64(1<<53 + 1),
		uint64(math.MaxUint64), uint64(1 << 63), 0.0, math.Copysign(0, -1), 1.0, 3.0, 2.5, -1.5, float64(1 << 53), 1e300, 5e-324,
		math.Inf(1), math.Inf(-1), math.NaN(), "", "a", "b", "ab", "é", "\x00", "a\x00b", "\xff", "1", "true", "null"}
	var gen func(depth int) any
	gen = func(depth int) any {
		switch n := rng.IntN(10); {
		case depth < 3 && n == 0:
			l := make([]any, rng.IntN(3))
			for i := range l {
				l[i] = gen(depth + 1)
			}
			return l
		case depth < 3 && n < 3:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[[]string{"a", "b", "c", "$f", "$s", "$a", "x\x00", "1"}[rng.IntN(8)]] = gen(depth + 1)
			}
			return m
		}
		return scalars[rng.IntN(len(scalars))]
	}
	paths := []string{"a", "b", "c", "a.a", "a.b", "b.c", "c.a.b", "1", "a.1"}
	ops := []string{opEq, opNe, opGt, opGte, opLt, opLte, ""}
	var rows, matched int
	err := db.read(ctx, func(c *conn) error {
		for range filterRounds {
			value := map[string]any{}
			for _, k := range []string{"a", "b", "c", "1"} {
				if rng.IntN(3) > 0 {
					value[k] = gen(0)
				}
			}
			stored, err := codec.Marshal(value)
			if err != nil {
				return err
			}
			filter := map[string]any{}
			for range 1 + rng.IntN(2) {
				path := paths[rng.IntN(len(paths))]
				operand := gen(1)
				if rng.IntN(3) > 0 { // often the value the item holds there
					if v, ok := lookupPath(value, strings.Split(path, ".")); ok {
						operand = v
					}
				}
				switch op := ops[rng.IntN(len(ops))]; op {
				case "":
					filter[path] = operand
				default:
					filter[path] = map[string]any{op: operand}
				}
			}
			plain := map[string]any{}
			for k, v := range filter {
				if m, ok := v.(map[string]any); ok {
					for _, x := range m {
						v = x
					}
				}
				plain[k] = v
			}
			// The three filters: thread metadata (strict), store (operators,
			// loose), List's checkpoint metadata (equality, loose).
			kind := rng.IntN(3)
			var want bool
			var conds []byte
			switch kind {
			case 0, 1:
				var rf *recFilter
				if kind == 0 {
					rf, err = compileMetadataFilter(plain)
				} else {
					rf, err = compileStoreFilter(filter)
				}
				if err != nil {
					continue // refused in Go before any SQL: nothing to compare
				}
				want = rf.match(stored)
				if conds, err = pgConds(rf); err != nil {
					return err
				}
			case 2:
				enc, err := encodeFilter(plain)
				if err != nil {
					continue
				}
				var terms []filterTerm
				if err := codec.Unmarshal(enc, &terms); err != nil {
					return err
				}
				var md map[string]any
				if err := codec.Unmarshal(stored, &md); err != nil {
					return err
				}
				want = matchTerms(md, terms)
				if conds, err = pgListFilter(enc); err != nil {
					return err
				}
			}
			var got bool
			doc := pgTypedJSON(stored)
			err = c.d.Query(`SELECT agentstate_match($1::jsonb, $2::jsonb)`, []any{doc, conds}, func(r row) error {
				got = r.Int64(0) != 0
				return nil
			})
			if err != nil {
				return fmt.Errorf("value %v filter %v: %w", value, filter, err)
			}
			rows++
			if want {
				matched++
			}
			if got != want {
				return fmt.Errorf("value %#v\nfilter %#v (kind %d)\nGo %v, PostgreSQL %v\ntyped JSON %v\nconds %s", value, filter, kind, want, got, doc, conds)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rows < 1000 || matched < rows/20 || matched > rows-rows/20 {
		t.Fatalf("%d comparisons, %d matches: too few of one kind to prove anything", rows, matched)
	}
	t.Logf("%d filters compared, %d matched", rows, matched)
}

// pgWrittenFor pins each statement written out for PostgreSQL to the
// SQLite text it translates (a hash of it): when the engine's statement
// changes, its translation must be reviewed, or PostgreSQL would keep the
// old behaviour. Update the hash once the translation matches again.
var pgWrittenFor = map[string]string{
	"0957a2b6c5ab": "INSERT INTO threads(thread_id, assistant_id, user_id, displa",
	"0a4540e8c33c": "VACUUM",
	"14e2b350e173": "SELECT name FROM sqlite_master WHERE type='table' AND name N",
	"1554e979625c": "SELECT count(*) FROM sqlite_master",
	"2e644a5eb792": "PRAGMA incremental_vacuum",
	"35ab85b2ac00": "INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint",
	"3c9269960144": "INSERT INTO event_seqs(thread_id, last_seq)",
	"3f8c1957616c": "PRAGMA wal_checkpoint(TRUNCATE)",
	"4121070653ee": "INSERT OR REPLACE INTO checkpoints(thread_id, checkpoint_ns,",
	"47b0519fab28": "INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint",
	"4c4a5282a0ab": "PRAGMA page_size",
	"4d1dbdf36fab": "INSERT INTO store_items(namespace, key, value, created_at, u",
	"5ba0cff1d719": "UPDATE checkpoints SET metadata = ? WHERE thread_id = ? AND ",
	"5dc9c1abfabe": "SELECT v.ver, b.type, b.data, b.enc, b.base, b.checkpoint_id",
	"66053cc7fa5f": "SELECT status FROM runs WHERE run_id=?",
	"6944eaa14dfc": "SELECT s.thread_id, coalesce(m.mode, ''), sum(s.cps), sum(s.",
	"72bdc9808e4d": "PRAGMA freelist_count",
	"80b42ff05db7": "PRAGMA user_version",
	"86fdcd8fddce": "INSERT INTO threads(thread_id, assistant_id, user_id, displa",
	"8c5ff49b85d8": "INSERT INTO event_seqs(thread_id, last_seq)",
	"8e78ac954e3c": "UPDATE threads SET metadata=?4, pinned=?5, updated_at=coales",
	"8ec6b433a0f3": "SELECT run_id, status, operation_kind, worker_id, worker_lea",
	"b46820995588": "WITH RECURSIVE chain(id, child, depth, ver, parent) AS (",
	"b927f8d57ca1": "INSERT INTO store_items(namespace, key, value, created_at, u",
	"cbba8d9fe340": "PRAGMA application_id",
	"ce2cfadfb24b": "INSERT OR REPLACE INTO writes(thread_id, checkpoint_ns, chec",
	"e2ba7c9f86d7": "PRAGMA page_count",
	"ce414b106582": "WITH RECURSIVE chain(id, child, depth, ver, parent) AS (",
	"66e643984751": "WITH RECURSIVE chain(id, child, depth, ver, parent) AS (",
}

func TestPGStatementsMatchTheirSQLite(t *testing.T) {
	var stale []string
	for q := range pgStatements {
		h := sha256.Sum256([]byte(q))
		got := hex.EncodeToString(h[:6])
		if want, ok := pgWrittenFor[got]; !ok {
			stale = append(stale, fmt.Sprintf("%s (%q...)", got, firstLine(q)))
		} else if want != firstLine(q) {
			t.Errorf("hash %s names %q, the statement starts %q", got, want, firstLine(q))
		}
	}
	if len(stale) > 0 {
		slices.Sort(stale)
		t.Fatalf("%d statements written out for PostgreSQL translate SQLite text this test has not seen: review each translation in dialect_pg.go, then record its hash in pgWrittenFor:\n%s", len(stale), strings.Join(stale, "\n"))
	}
	if len(pgWrittenFor) != len(pgStatements) {
		t.Fatalf("pgWrittenFor has %d entries for %d statements: remove the stale ones", len(pgWrittenFor), len(pgStatements))
	}
}

func firstLine(q string) string {
	l, _, _ := strings.Cut(q, "\n")
	if len(l) > 60 {
		l = l[:60]
	}
	return l
}
