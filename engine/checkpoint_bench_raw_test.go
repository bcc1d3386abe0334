//go:build !js

// Native only: it drives ncruces connections directly.

package engine

import (
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver/sqlite"
	"github.com/ncruces/go-sqlite3"
)

// BenchmarkStepRawSQL inserts the same rows as BenchmarkStep with plain
// ncruces statements in one transaction per step: the floor the API's cost
// is measured against.
func BenchmarkStepRawSQL(b *testing.B) {
	if onPG() {
		benchStepRawPG(b)
		return
	}
	db := benchDB(b, nil)
	c, _ := db.acquireRaw()
	cpBytes, _ := codec.Marshal(storedCheckpoint{V: 4, TS: "2026-11-29T00:00:00Z", ChannelVersions: map[string]string{"messages": "1", "title": "1", "__start__": "1"},
		VersionsSeen: map[string]map[string]string{"agent": {"messages": "1"}, "__input__": {}}})
	md, _ := marshalMetadata(benchMetadata(0))
	ins := []string{
		`INSERT INTO checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_id, run_id, checkpoint, metadata) VALUES (?, '', ?, ?, 'run-1', ?, ?)`,
		`INSERT INTO blobs(thread_id, checkpoint_ns, channel, version, checkpoint_id, type, data) VALUES (?, '', 'messages', ?, ?, 'json', ?)`,
		`INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data, task_path) VALUES (?, '', ?, ?, 0, 'messages', 'json', ?, ?)`,
	}
	var stmts []*sqlite3.Stmt
	for _, q := range ins {
		st, _, err := c.Prepare(q)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		stmts = append(stmts, st)
	}
	exec := func(st *sqlite3.Stmt, args ...any) {
		st.ClearBindings()
		for i, a := range args {
			var err error
			switch v := a.(type) {
			case nil:
				err = st.BindNull(i + 1)
			case string:
				err = st.BindText(i+1, v)
			case []byte:
				err = st.BindBlob(i+1, v)
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if err := st.Exec(); err != nil {
			b.Fatal(err)
		}
		st.Reset()
	}
	parent := ""
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("%012d", i+1)
		if err := c.Exec("BEGIN IMMEDIATE"); err != nil {
			b.Fatal(err)
		}
		var p any
		if parent != "" {
			p = parent
		}
		exec(stmts[0], "bench", id, p, cpBytes, md)
		exec(stmts[1], "bench", fmt.Sprintf("%08d", i+1), id, cpBenchValue.Data)
		exec(stmts[2], "bench", id, "agent", cpBenchWrite.Data, "~agent")
		exec(stmts[2], "bench", id, "tools", cpBenchWrite.Data, "~tools")
		if err := c.Exec("COMMIT"); err != nil {
			b.Fatal(err)
		}
		parent = id
	}
}

// acquireRaw hands the writer connection to a benchmark for direct use.
func (db *DB) acquireRaw() (*sqlite3.Conn, error) {
	<-db.writer.tokens
	c := db.writer.take()
	db.onClose(func() { db.writer.put(c) })
	return c.d.(*sqlite.Conn).Raw(), nil
}
