package engine

import (
	_ "embed"

	"github.com/agentstate/agentstate/codec"
)

// emptyImageS2 is an empty database of the current schema, as a fresh open
// leaves it before it records a mode (freshSchema and its history, the
// header fields, 4 KiB pages, incremental auto-vacuum), in a codec.FormatV1S2
// envelope: 143,360 bytes of file in 2,539. The GOOS=js build opens a fresh
// in-memory database from it, so that SQLite runs none of the schema's
// statements at start-up (they had V8 compile SQLite's parser with its
// optimising tier while the first call waited). Written by
// TestEmptyImageIsTheSchema (AGENTSTATE_UPDATE=1), which also holds it to
// the migrations.
//
//go:embed schema_empty.s2
var emptyImageS2 []byte

// emptyImage returns a copy of the empty database's bytes.
func emptyImage() ([]byte, error) {
	b, _, err := codec.Body(emptyImageS2)
	return b, err
}
