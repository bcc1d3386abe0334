package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// BenchmarkReplacedCheck is what each write transaction pays to make sure
// its file was not deleted or replaced: two stats.
func BenchmarkReplacedCheck(b *testing.B) {
	c, err := Open(filepath.Join(b.TempDir(), "a.db"), Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Exec("CREATE TABLE t(x)"); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := c.replaced(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestBeginWriteRefusesReplacedFile: the driver-level guarantee.
func TestBeginWriteRefusesReplacedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	c, err := Open(path, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec("CREATE TABLE t(x)"); err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(driver.TxWrite); err != nil {
		t.Fatal(err)
	}
	c.Rollback()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := c.Begin(driver.TxRead); err != nil {
		t.Fatalf("a read transaction on a deleted file: %v", err)
	}
	c.Rollback()
	if err := c.Begin(driver.TxWrite); !errors.Is(err, driver.ErrReplaced) {
		t.Fatalf("a write transaction on a deleted file: %v, want ErrReplaced", err)
	}
	if c.InTx() {
		t.Fatal("the refused write transaction is still open")
	}
	if err := c.Close(); !errors.Is(err, driver.ErrReplaced) {
		t.Fatalf("Close of a deleted file: %v, want ErrReplaced", err)
	}
}
