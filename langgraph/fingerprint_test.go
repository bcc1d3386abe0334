package langgraph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
)

// fingerprint is a digest of everything the destination holds (its
// export), to check that a failed import left it as it was.
func fingerprint(t *testing.T, db *engine.DB) string {
	t.Helper()
	var b bytes.Buffer
	if _, err := db.Export(context.Background(), &b, admin.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:])
}
