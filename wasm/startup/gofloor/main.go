//go:build js && wasm

// Command gofloor is the smallest Go program for GOOS=js that tells its
// host it has started: what any Go module costs a start-up before it does
// any work of its own (wasm/startup/go-floor.mjs compares it with the
// engine module).
package main

import "syscall/js"

func main() {
	js.Global().Get("__go_floor_ready").Invoke()
	select {}
}
