//go:build js && wasm

// Command js is the agentstate engine compiled for GOOS=js.
//
// Loaded by the npm package's loader (which passes --bridge=NAME), it hands
// a JavaScript API object to the global function NAME and stays resident:
// every call returns a Promise and runs in its own goroutine, so the event
// loop only waits while Go computes, never while it blocks.
//
// Run directly under Node with Go's wasm_exec_node.js, it opens an
// in-memory database and prints its schema version, proving the engine
// works inside a JavaScript host.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall/js"

	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/wasm/bridge"
)

func main() {
	bridgeName := ""
	for _, a := range os.Args[1:] {
		if name, ok := strings.CutPrefix(a, "--bridge="); ok {
			bridgeName = name
		}
		if a == "--test-hooks" {
			bridge.AddTestHooks()
		}
	}
	if bridgeName != "" {
		js.Global().Get(bridgeName).Invoke(api(bridge.New()))
		select {} // stay resident; the process ends with the host
	}
	smoke()
}

func smoke() {
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
