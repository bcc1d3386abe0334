//go:build js && wasm

// Command js is the agentstate engine compiled for GOOS=js: run under Node
// with Go's wasm_exec_node.js it opens an in-memory database and prints its
// schema version, proving the engine works inside a JavaScript host.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/agentstate/agentstate/engine"
)

func main() {
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Memory, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentstate wasm:", err)
		os.Exit(1)
	}
	defer db.Close()
	in, err := db.Info(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentstate wasm:", err)
		os.Exit(1)
	}
	fmt.Printf("agentstate wasm: schema version %d\n", in.SchemaVersion)
}
