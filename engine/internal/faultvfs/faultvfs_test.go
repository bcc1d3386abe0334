package faultvfs

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

func init() { vfs.Register("faultvfs-test", testVFS) }

var testVFS = New()

func count(t *testing.T, c *sqlite3.Conn) int64 {
	t.Helper()
	st, _, err := c.Prepare("SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !st.Step() {
		t.Fatal(st.Err())
	}
	return st.ColumnInt64(0)
}

func exec(t *testing.T, c *sqlite3.Conn, sql string) {
	t.Helper()
	if err := c.Exec(sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// Rows inserted after the last sync vanish with the power; rows synced by
// a checkpoint stay; the file is consistent either way.
func TestDropsUnsyncedWrites(t *testing.T) {
	for _, loss := range []Loss{DropAll, DropRandom} {
		path := filepath.Join(t.TempDir(), "t.db")
		c, err := sqlite3.Open("file:" + path + "?vfs=faultvfs-test")
		if err != nil {
			t.Fatal(err)
		}
		exec(t, c, "PRAGMA journal_mode=WAL")
		exec(t, c, "PRAGMA synchronous=NORMAL")
		exec(t, c, "CREATE TABLE t(x)")
		for range 10 {
			exec(t, c, "INSERT INTO t VALUES (randomblob(3000))")
		}
		exec(t, c, "PRAGMA wal_checkpoint(TRUNCATE)")
		for range 10 {
			exec(t, c, "INSERT INTO t VALUES (randomblob(3000))")
		}
		if testVFS.Unsynced() == 0 {
			t.Fatal("no unsynced writes recorded")
		}
		testVFS.Crash()
		if err := c.Exec("INSERT INTO t VALUES (1)"); err == nil {
			t.Fatal("a write succeeded after the power cut")
		}
		c.Close()
		if _, err := os.Stat(path + "-wal"); err != nil {
			t.Fatalf("the WAL was deleted after the power cut: %v", err)
		}
		dropped, kept, err := testVFS.PowerCycle(loss, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		if dropped == 0 || (loss == DropAll) != (kept == 0) {
			t.Fatalf("loss %d: dropped %d, kept %d", loss, dropped, kept)
		}
		c, err = sqlite3.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		n := count(t, c)
		if loss == DropAll && n != 10 || n < 10 || n > 20 {
			t.Fatalf("loss %d: %d rows after the cut", loss, n)
		}
		st, _, _ := c.Prepare("PRAGMA integrity_check")
		st.Step()
		if s := st.ColumnText(0); s != "ok" {
			t.Fatalf("integrity_check: %s", s)
		}
		st.Close()
		c.Close()
	}
}

// CrashAfter cuts the power at the nth mutating operation, which fails.
func TestCrashAfter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	c, err := sqlite3.Open("file:" + path + "?vfs=faultvfs-test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exec(t, c, "PRAGMA journal_mode=WAL")
	exec(t, c, "CREATE TABLE t(x)")
	before := testVFS.Ops()
	testVFS.CrashAfter(2)
	if err := c.Exec("INSERT INTO t VALUES (randomblob(10000))"); err == nil {
		t.Fatal("the insert survived a cut at its second write")
	}
	if !testVFS.Crashed() || testVFS.Ops() != before+2 {
		t.Fatalf("crashed %v after %d ops", testVFS.Crashed(), testVFS.Ops()-before)
	}
	c.Close()
	if _, _, err := testVFS.PowerCycle(DropAll, nil); err != nil {
		t.Fatal(err)
	}
}
