//go:build !js && !wasip1

package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/internal/driver"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
)

// Tests of what only a server backend has; they run in the postgres half.

func pgOnly(t *testing.T) {
	t.Helper()
	if !onPG() {
		t.Skip("about the PostgreSQL backend; runs in the postgres half")
	}
}

// An SQLite file moves to PostgreSQL and back through export and import:
// every checkpoint reads the same, and the exports are the same bytes.
func TestExportMovesBetweenBackends(t *testing.T) {
	pgOnly(t)
	ctx := context.Background()
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			testBackend = "sqlite" // the fixture is a file
			file, cps := opsFixture(t, mode)
			testBackend = "postgres"
			o := DefaultOptions()
			o.Mode = channels.ModeAuto
			src, err := Open(ctx, file, &o)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			first := exportOf(t, src, "")

			server := testPath(t, Memory)
			if _, err := ImportFile(ctx, server, bytes.NewReader(first), nil, admin.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			onServer := openRW(t, server)
			second := exportOf(t, onServer, "")
			if !bytes.Equal(first, second) {
				t.Fatalf("SQLite export -> PostgreSQL -> export differs:\n%s", firstDiff(first, second))
			}
			if rep, err := onServer.Verify(ctx, admin.VerifyOptions{}); err != nil || !rep.OK {
				t.Fatalf("the imported schema does not verify: %v %v", err, rep.Problems)
			}
			for _, cfg := range cps {
				a, err1 := src.State(ctx, cfg)
				b, err2 := onServer.State(ctx, cfg)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
				if !bytes.Equal([]byte(stateDigest(a)), []byte(stateDigest(b))) {
					t.Fatalf("state of %s differs on the server", cfg.CheckpointID)
				}
			}
			back := filepath.Join(t.TempDir(), "back.db")
			if _, err := ImportFile(ctx, back, bytes.NewReader(second), nil, admin.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
			o.ReadOnly = true
			again, err := Open(ctx, back, &o)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if third := exportOf(t, again, ""); !bytes.Equal(first, third) {
				t.Fatalf("PostgreSQL export -> SQLite -> export differs:\n%s", firstDiff(first, third))
			}
		})
	}
}

// Verify checks the columns PostgreSQL derives from the stored bytes, and
// the catalogue against migrations_pg.
func TestPGVerifyFindsServerDamage(t *testing.T) {
	pgOnly(t)
	for _, tc := range []struct{ name, sql, kind, text string }{
		{"versions", `UPDATE checkpoints SET versions = '{}' WHERE checkpoint_id = (SELECT max(checkpoint_id) FROM checkpoints)`, "checkpoint", "derived column versions"},
		{"metadata", `UPDATE checkpoints SET metadata_j = NULL WHERE checkpoint_id = (SELECT min(checkpoint_id) FROM checkpoints)`, "checkpoint", "derived column metadata_j"},
		{"store value", `UPDATE store_items SET value_j = '{"lang": "en"}'`, "store", "derived column value_j"},
		{"thread metadata", `UPDATE threads SET metadata_j = '{}' WHERE thread_id = 'chat'`, "thread", "derived column metadata_j"},
		{"dropped index", `DROP INDEX events_by_run`, "schema", `index "events_by_run" is missing`},
		{"added table", `CREATE TABLE mine (x int)`, "schema", `table "mine" was not created by agentstate`},
		{"added column", `ALTER TABLE runs ADD COLUMN extra int`, "schema", `table "runs" differs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := opsFixture(t, channels.ModeDelta)
			if rep := verifyPath(t, path); !rep.OK {
				t.Fatalf("before the damage: %v", rep.Problems)
			}
			tamperSource(t, path, tc.sql)
			wantProblem(t, verifyPath(t, path), tc.kind, tc.text)
		})
	}
}

// A schema written by a version 5 build (no writes.enc: all that
// migrations_pg/0006 adds) upgrades at Open: history 1..6, the pending
// writes it held read back the same, it verifies, and new writes go in.
func TestPGUpgradeFromV5Schema(t *testing.T) {
	pgOnly(t)
	path, _ := opsFixture(t, channels.ModeDelta)
	db := openRW(t, path)
	// A version 5 build stored every write as given: unpack the packed ones.
	err := db.write(bg, func(c *conn) error {
		type key struct {
			thread, ns, cp, task string
			idx                  int64
		}
		plain := map[key][]byte{}
		err := c.query(`SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, idx, enc, data FROM writes WHERE enc <> 0`, nil, func(st row) error {
			b, err := loadWrite(st, 5)
			plain[key{st.Text(0), st.Text(1), st.Text(2), st.Text(3), st.Int64(4)}] = b
			return err
		})
		if err != nil || len(plain) == 0 {
			return fmt.Errorf("%d packed writes in the fixture (%v)", len(plain), err)
		}
		for k, b := range plain {
			if err := c.exec(`UPDATE writes SET enc = 0, data = ? WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND task_id = ? AND idx = ?`, b, k.thread, k.ns, k.cp, k.task, k.idx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	before := allTuples(t, db)
	db.Close()
	if len(before) == 0 || !slices.ContainsFunc(before, func(tp Tuple) bool { return len(tp.PendingWrites) > 0 }) {
		t.Fatal("the fixture holds no pending writes")
	}
	tamperSource(t, path, `ALTER TABLE writes DROP COLUMN enc; DELETE FROM schema_history WHERE version >= 6; UPDATE agentstate_header SET schema_version = 5`)
	db = openRW(t, path)
	want := make([]int64, SchemaVersion)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if diff := cmp.Diff(want, history(t, db)); diff != "" {
		t.Fatalf("schema_history after the upgrade (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, allTuples(t, db), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("checkpoints after the upgrade (-before +after):\n%s", diff)
	}
	if rep, err := db.Verify(bg, admin.VerifyOptions{}); err != nil || !rep.OK {
		t.Fatalf("verify after the upgrade: %v %v", err, rep.Problems)
	}
	cfg := before[0].Config
	v := []byte(`"` + strings.Repeat("after the upgrade ", 50) + `"`)
	if err := db.PutWrites(bg, cfg, []Write{{Channel: "messages", Value: codec.Blob{Type: "json", Data: v}}}, "upgraded", ""); err != nil {
		t.Fatal(err)
	}
	var enc int64
	err = db.read(bg, func(c *conn) (err error) {
		enc, err = c.queryInt64(`SELECT enc FROM writes WHERE task_id = 'upgraded'`)
		return err
	})
	if err != nil || enc != encPacked {
		t.Fatalf("a repetitive write after the upgrade is stored with enc %d (%v), want %d", enc, err, encPacked)
	}
	tp, err := db.GetTuple(bg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tp.PendingWrites, func(w PendingWrite) bool { return w.TaskID == "upgraded" && bytes.Equal(w.Value.Data, v) }) {
		t.Fatal("the write made after the upgrade does not read back")
	}
}

// Open refuses a search_path without a schema, one whose first schema does
// not exist, and a bad URL, with typed errors.
func TestPGOpenRefusesBadURLs(t *testing.T) {
	pgOnly(t)
	u := testPath(t, Memory)
	i := strings.Index(u, "search_path=")
	for _, bad := range []string{u[:i] + "search_path=no_such_schema_here", "postgres://[::1"} {
		_, err := Open(context.Background(), bad, nil)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", displayPath(bad), err)
		}
	}
	// A first schema that does not exist is refused, naming it, though the
	// next one exists (the server would use that one), and nothing is
	// created there.
	existing := u[i+len("search_path="):]
	for sp, name := range map[string]string{"no_such_schema_here," + existing: "no_such_schema_here", `"No_Such",` + existing: "No_Such", "NoSuch,%20" + existing: "nosuch"} {
		_, err := Open(context.Background(), u[:i]+"search_path="+sp, nil)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), `schema "`+name+`" first`) {
			t.Errorf("search_path=%s: %v, want ErrInvalidArgument naming schema %q", sp, err, name)
		}
	}
	if n := pgAdminExec(t, `SELECT 1 FROM pg_catalog.pg_class WHERE relnamespace = $1::regnamespace`, existing); n != 0 {
		t.Errorf("a refused Open created %d objects in the next schema of the search_path", n)
	}
	// Case folds as the server folds it: an unquoted upper-case name is
	// the lower-case schema.
	db, err := Open(context.Background(), u[:i]+"search_path="+strings.ToUpper(existing), nil)
	if err != nil {
		t.Errorf("search_path=%s (the schema %s, folded): %v", strings.ToUpper(existing), existing, err)
	} else {
		db.Close()
	}
	if got := displayPath("postgres://u:secret@h/db?password=hunter2&search_path=s"); strings.Contains(got, "secret") || strings.Contains(got, "hunter2") {
		t.Errorf("displayPath shows the password: %s", got)
	}
}

// Text PostgreSQL cannot hold (NUL, invalid UTF-8) is refused as an
// argument, before anything is written; SQLite stores it.
func TestPGRefusesTextItCannotHold(t *testing.T) {
	pgOnly(t)
	db := openTest(t, Memory, nil)
	ctx := context.Background()
	for _, th := range []string{"a\x00b", "\xff"} {
		_, err := db.Put(ctx, Config{ThreadID: th}, cp("1", map[string]string{"c": "1"}, map[string]string{"c": `"x"`}), nil, map[string]string{"c": "1"})
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Put on thread %q: %v, want ErrInvalidArgument", th, err)
		}
	}
	_, err := db.Put(ctx, Config{ThreadID: "t"}, cp("1", map[string]string{"c\x00": "1"}, nil), nil, nil)
	if !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Put with a NUL in a channel name: %v, want ErrInvalidArgument", err)
	}
	if in, err := db.Info(ctx); err != nil || in.Rows["checkpoints"] != 0 {
		t.Fatalf("refused puts wrote %d checkpoints (%v)", in.Rows["checkpoints"], err)
	}
}

// benchStepRawPG is BenchmarkStepRawSQL on PostgreSQL: the same rows as
// BenchmarkStep (with the columns the engine derives, precomputed), inserted
// with pgx's own API, prepared statements and one transaction per step,
// over a connection with the engine's session settings.
func benchStepRawPG(b *testing.B) {
	ctx := context.Background()
	u := testPath(b, Memory)
	db, err := Open(ctx, u, nil) // the schema
	if err != nil {
		b.Fatal(err)
	}
	db.Close()
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		b.Fatal(err)
	}
	cfg.RuntimeParams["synchronous_commit"] = "off"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	cpBytes, _ := codec.Marshal(storedCheckpoint{V: 4, TS: "2026-11-29T00:00:00Z", ChannelVersions: map[string]string{"messages": "1", "title": "1", "__start__": "1"},
		VersionsSeen: map[string]map[string]string{"agent": {"messages": "1"}, "__input__": {}}})
	md, _ := marshalMetadata(benchMetadata(0))
	versions, _ := pgVersionsJSON(cpBytes)
	mdJSON := pgTypedJSON(md)
	parent := ""
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("%012d", i+1)
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var p any
		if parent != "" {
			p = parent
		}
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata, versions, metadata_j)
				VALUES ($1, '', $2, $3, 'run-1', $4, $5, $6, $7)`, []any{"bench", id, p, cpBytes, md, versions, mdJSON}},
			{`INSERT INTO blobs(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, data) VALUES ($1, '', 'messages', $2, $3, 'json', $4)`,
				[]any{"bench", fmt.Sprintf("%08d", i+1), id, cpBenchValue.Data}},
			{`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data, task_path) VALUES ($1, '', $2, $3, 0, 'messages', 'json', $4, $5)`,
				[]any{"bench", id, "agent", cpBenchWrite.Data, "~agent"}},
			{`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data, task_path) VALUES ($1, '', $2, $3, 0, 'messages', 'json', $4, $5)`,
				[]any{"bench", id, "tools", cpBenchWrite.Data, "~tools"}},
		} {
			if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		parent = id
	}
}

// manyRaw is a raw writer of the many-process benchmark: each step inserts
// the rows a step of the workload writes (a checkpoint, a snapshot every
// fourth step, the two tasks' writes, the event counter and two events)
// with pgx, in one transaction, over a connection with the engine's
// session settings.
func manyRaw(ctx context.Context, url string, w relWork, thread string, say func(...any)) error {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["synchronous_commit"] = "off"
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	parent := ""
	for n := 1; ; n++ {
		human, _ := codec.Marshal(w.human(thread, n))
		agent, _ := codec.Marshal(w.agentUpdate(thread, n))
		id := fmt.Sprintf("%s-%08d", thread, n)
		cp, _ := codec.Marshal(storedCheckpoint{V: 4, TS: "2026-11-29T00:00:00Z", ChannelVersions: map[string]string{"messages": id}})
		md, _ := marshalMetadata(Metadata{"source": "loop", "step": int64(n), "parents": map[string]any{}, "n": int64(n)})
		versions, _ := pgVersionsJSON(cp)
		ev, _ := codec.Marshal(fmt.Sprintf("answer %d", n))
		evmd, _ := codec.Marshal(map[string]any{"n": int64(n)})
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			var p any
			if parent != "" {
				p = parent
			}
			qs := []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata, versions, metadata_j)
					VALUES ($1, '', $2, $3, 'run', $4, $5, $6, $7)`, []any{thread, id, p, cp, md, versions, pgTypedJSON(md)}},
				{`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data, consumed_by)
					VALUES ($1, '', $2, 'user', 0, 'messages', 'msgpack', $3, $4)`, []any{thread, id, human, id}},
				{`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data, consumed_by)
					VALUES ($1, '', $2, 'agent', 0, 'messages', 'msgpack', $3, $4)`, []any{thread, id, agent, id}},
				{`INSERT INTO event_seqs(thread_id, last_seq) VALUES ($1, 2) ON CONFLICT (thread_id) DO UPDATE SET last_seq = event_seqs.last_seq + 2`, []any{thread}},
				{`INSERT INTO events(thread_id, seq, run_id, event_type, category, content, metadata, created_at) VALUES ($1, $2, 'run', 'llm.ai.response', 'message', $3, $4, 0)`,
					[]any{thread, 2*n - 1, ev, evmd}},
				{`INSERT INTO events(thread_id, seq, run_id, event_type, category, content, metadata, created_at) VALUES ($1, $2, 'run', 'llm.trace', 'trace', $3, $4, 0)`,
					[]any{thread, 2 * n, ev, evmd}},
			}
			if n%4 == 1 {
				qs = append(qs, struct {
					sql  string
					args []any
				}{`INSERT INTO blobs(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, data) VALUES ($1, '', 'messages', $2, $2, 'msgpack', $3)`,
					[]any{thread, id, append(human, agent...)}})
			}
			for _, q := range qs {
				if _, err := tx.Exec(ctx, q.sql, q.args...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		say("C", thread, n, id)
		say("E", thread, n)
		parent = id
	}
}

// BenchmarkStepVsRawPG measures, in one loop under the same load, a step
// through the API (Put + two PutWrites, three transactions) against the
// same rows inserted with pgx: in one transaction per step (as
// BenchmarkStepRawSQL) and in three, one per call (the API's shape).
func BenchmarkStepVsRawPG(b *testing.B) {
	if !onPG() {
		b.Skip("PostgreSQL only")
	}
	ctx := context.Background()
	u := testPath(b, Memory)
	db, err := Open(ctx, u, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		b.Fatal(err)
	}
	cfg.RuntimeParams["synchronous_commit"] = "off"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	cpBytes, _ := codec.Marshal(storedCheckpoint{V: 4, TS: "2026-11-29T00:00:00Z", ChannelVersions: map[string]string{"messages": "1", "title": "1", "__start__": "1"},
		VersionsSeen: map[string]map[string]string{"agent": {"messages": "1"}, "__input__": {}}})
	md, _ := marshalMetadata(benchMetadata(0))
	versions, _ := pgVersionsJSON(cpBytes)
	mdJSON := pgTypedJSON(md)
	const (
		insCP    = `INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata, versions, metadata_j) VALUES ($1, '', $2, $3, 'run-1', $4, $5, $6, $7)`
		insBlob  = `INSERT INTO blobs(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, data) VALUES ($1, '', 'messages', $2, $3, 'json', $4)`
		insWrite = `INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data, task_path) VALUES ($1, '', $2, $3, 0, 'messages', 'json', $4, $5)`
	)
	raw := func(thread string, i int, parent string, txs int) {
		id := fmt.Sprintf("%012d", i)
		var p any
		if parent != "" {
			p = parent
		}
		type q struct {
			sql  string
			args []any
		}
		groups := [][]q{{{insCP, []any{thread, id, p, cpBytes, md, versions, mdJSON}}, {insBlob, []any{thread, fmt.Sprintf("%08d", i), id, cpBenchValue.Data}}},
			{{insWrite, []any{thread, id, "agent", cpBenchWrite.Data, "~agent"}}}, {{insWrite, []any{thread, id, "tools", cpBenchWrite.Data, "~tools"}}}}
		if txs == 1 {
			groups = [][]q{append(append(groups[0], groups[1]...), groups[2]...)}
		}
		for _, g := range groups {
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				for _, x := range g {
					if _, err := tx.Exec(ctx, x.sql, x.args...); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	parent := Config{ThreadID: "bench"}
	var tAPI, t1, t3 time.Duration
	b.ResetTimer()
	for i := range b.N {
		c, nv := benchCheckpoint(i + 1)
		s := time.Now()
		if parent, err = db.Put(ctx, parent, c, benchMetadata(i), nv); err != nil {
			b.Fatal(err)
		}
		for _, task := range []string{"agent", "tools"} {
			if err := db.PutWrites(ctx, parent, []Write{{Channel: "messages", Value: cpBenchWrite}}, task, "~"+task); err != nil {
				b.Fatal(err)
			}
		}
		tAPI += time.Since(s)
		prev := ""
		if i > 0 {
			prev = fmt.Sprintf("%012d", i)
		}
		s = time.Now()
		raw("raw1", i+1, prev, 1)
		t1 += time.Since(s)
		s = time.Now()
		raw("raw3", i+1, prev, 3)
		t3 += time.Since(s)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tAPI.Microseconds())/n, "api-µs/step")
	b.ReportMetric(float64(t1.Microseconds())/n, "raw1tx-µs/step")
	b.ReportMetric(float64(t3.Microseconds())/n, "raw3tx-µs/step")
	b.ReportMetric(float64(tAPI)/float64(t1), "api/raw1tx")
	b.ReportMetric(float64(tAPI)/float64(t3), "api/raw3tx")
}

// BenchmarkHeadStateVsSQLite reads the head of the same delta thread from
// an SQLite file and from PostgreSQL in turn, in one loop, so that both
// see the same load: warm (state cache) and cold (no caches: the history
// walk, its writes and the fold on every read).
func BenchmarkHeadStateVsSQLite(b *testing.B) {
	if !onPG() {
		b.Skip("PostgreSQL only")
	}
	for _, n := range []int{100, 1000} {
		for _, cache := range []int64{64 << 20, 0} {
			b.Run(fmt.Sprintf("messages=%d/cache=%v", n, cache > 0), func(b *testing.B) {
				o := DefaultOptions()
				o.Mode, o.HistoryCacheBytes = channels.ModeDelta, cache
				var dbs [2]*DB
				for i, path := range []string{filepath.Join(b.TempDir(), "h.db"), testPath(b, Memory)} {
					db, err := Open(bg, path, &o)
					if err != nil {
						b.Fatal(err)
					}
					defer db.Close()
					for i := range n {
						m := codec.Message{ID: fmt.Sprintf("m%07d", i), Type: codec.AI, Content: "some words of text"}
						if _, err := db.Commit(bg, "t", Step{Tasks: []TaskWrites{{TaskID: "x", Writes: []ChannelWrite{{Channel: MessagesChannel, Value: m}}}}}); err != nil {
							b.Fatal(err)
						}
					}
					dbs[i] = db
				}
				var spent [2]time.Duration
				b.ResetTimer()
				for range b.N {
					for i, db := range dbs {
						s := time.Now()
						if _, err := db.State(bg, Config{ThreadID: "t"}); err != nil {
							b.Fatal(err)
						}
						spent[i] += time.Since(s)
					}
				}
				b.ReportMetric(float64(spent[0].Microseconds())/float64(b.N), "sqlite-µs/read")
				b.ReportMetric(float64(spent[1].Microseconds())/float64(b.N), "pg-µs/read")
				b.ReportMetric(float64(spent[1])/float64(spent[0]), "pg/sqlite")
			})
		}
	}
}

// A statement the server cancels (its statement_timeout) stops Verify with
// ErrInterrupted: the check could not run, and the data is not at fault,
// so it is no problem of the report. Here a table Verify reads is locked
// by another session past the statement_timeout of Verify's sessions.
func TestPGVerifyStatementTimeoutIsNoProblem(t *testing.T) {
	pgOnly(t)
	u := testPath(t, Memory)
	db, err := Open(context.Background(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, db, records.NewRun{RunID: "r1", ThreadID: "t1", Status: records.RunRunning})
	db.Close()
	o := DefaultOptions()
	o.ReadOnly = true
	v, err := Open(context.Background(), u+"&options=-c%20statement_timeout%3D1500", &o)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	c := pgDial(t, u)
	defer c.Close()
	if err := c.Begin(driver.TxWrite); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(`LOCK TABLE runs IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	defer c.Rollback()
	rep, err := v.Verify(context.Background(), admin.VerifyOptions{})
	if !errors.Is(err, ErrInterrupted) {
		t.Fatalf("Verify with a statement cancelled by statement_timeout: %v (report %+v), want ErrInterrupted", err, rep.Problems)
	}
	if errors.Is(err, ErrCorrupt) {
		t.Fatalf("a statement_timeout reported as damage: %v", err)
	}
}

// A session the server ends inside a transaction (pg_terminate_backend, as
// a restart or failover does) fails the call with ErrConnectionLost, not
// the server's raw text, and the next call runs on a new session.
func TestPGTerminatedSessionIsConnectionLost(t *testing.T) {
	pgOnly(t)
	db := openTest(t, Memory, nil)
	err := db.write(rctx, func(c *conn) error {
		var pid int64
		if _, err := c.queryRow(`SELECT pg_backend_pid()`, nil, func(r row) error { pid = r.Int64(0); return nil }); err != nil {
			return err
		}
		if n := pgAdminExec(t, `SELECT pg_terminate_backend($1::int, 10000)`, pid); n != 1 {
			t.Fatalf("terminate: %d rows", n)
		}
		return c.exec(`SELECT 1`)
	})
	if !errors.Is(err, ErrConnectionLost) {
		t.Fatalf("a write whose session was terminated: %v, want ErrConnectionLost", err)
	}
	if pgErrorLeaked(err) && !strings.Contains(err.Error(), "agentstate:") {
		t.Fatalf("raw server error: %v", err)
	}
	if err := db.Store().Put(rctx, []string{"ns"}, "k", map[string]any{"v": 1}); err != nil {
		t.Fatalf("the next write: %v", err)
	}
}

// TestReadKeepsItsAnswerWhenItsSessionEnds: the server ends a read's
// session after its last statement answered (pg_terminate_backend, a
// restart); the read returns what it read, not ErrConnectionLost, and the
// next call dials anew.
func TestReadKeepsItsAnswerWhenItsSessionEnds(t *testing.T) {
	pgOnly(t)
	db := openTest(t, testPath(t, "ended.db"), nil)
	var got int64
	err := db.read(rctx, func(c *conn) error {
		var pid int64
		if _, err := c.queryRow(`SELECT pg_backend_pid()`, nil, func(r row) error { pid = r.Int64(0); return nil }); err != nil {
			return err
		}
		if n := pgAdminExec(t, `SELECT pg_terminate_backend($1::int, 10000)`, pid); n != 1 {
			t.Fatalf("terminated %d sessions", n)
		}
		got = pid
		return nil
	})
	if err != nil || got == 0 {
		t.Fatalf("a read whose session ended after it answered: %v (read %d)", err, got)
	}
	if _, err := db.Info(rctx); err != nil {
		t.Fatalf("the next call: %v", err)
	}
}
