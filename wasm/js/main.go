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
)

func main() {
	bridgeName := ""
	for _, a := range os.Args[1:] {
		if name, ok := strings.CutPrefix(a, "--bridge="); ok {
			bridgeName = name
		}
		if a == "--test-hooks" {
			addTestHooks()
		}
	}
	if bridgeName != "" {
		js.Global().Get(bridgeName).Invoke(newBridge().api())
		select {} // stay resident; the process ends with the host
	}
	smoke()
}

// addTestHooks adds calls that only the package's own tests ask for
// (loadEngine({testHooks: true})): "test.crash" panics on a goroutine of
// its own, where no recover can catch it, as a bug in a background task
// would, to prove that the JavaScript side survives the engine stopping.
func addTestHooks() {
	ops["test.crash"] = func(context.Context, *handle, []byte, in) (any, *out, error) {
		done := make(chan struct{})
		go func() {
			defer close(done)
			panic("agentstate test hook: crash on purpose")
		}()
		<-done
		return nil, nil, nil
	}
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
