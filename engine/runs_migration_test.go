//go:build !js && !wasip1

package engine

import (
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/engine/records"
)

// (Not in the WebAssembly test builds, which have no PostgreSQL backend.)

// Migration 10 makes keys unique in the database: of runs on several
// threads that an older version let share a key, the first keeps it.
func TestRunMigrationKeepsFirstKey(t *testing.T) {
	db, _ := openRec(t, nil)
	for i, id := range []string{"r1", "r2", "r3"} {
		mustCreate(t, db, records.NewRun{RunID: id, ThreadID: fmt.Sprintf("t%d", i), IdempotencyKey: "k-" + id})
	}
	m := migrations()[9]
	if testBackend != "sqlite" {
		m = pgMigrations[9]
	}
	err := db.write(rctx, func(c *conn) error {
		// The file as version 9 left it: keys unique per thread, one shared.
		for _, q := range []string{
			`DROP INDEX runs_by_idempotency_key`,
			`CREATE UNIQUE INDEX runs_by_idempotency_key ON runs(thread_id, idempotency_key) WHERE idempotency_key IS NOT NULL`,
			`UPDATE runs SET idempotency_key = 'shared' WHERE run_id IN ('r1', 'r2')`,
		} {
			if err := c.exec(q); err != nil {
				return err
			}
		}
		return applyMigration(c, m)
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"r1": "shared", "r2": "", "r3": "k-r3"} {
		if got := getRun(t, db, id).IdempotencyKey; got != want {
			t.Errorf("%s: key %q, want %q", id, got, want)
		}
	}
	c, err := db.Runs().Create(rctx, records.NewRun{ThreadID: "t9", IdempotencyKey: "shared"})
	if err != nil || c.New || c.Run.RunID != "r1" {
		t.Fatalf("create with the shared key: %+v %v", c, err)
	}
}
