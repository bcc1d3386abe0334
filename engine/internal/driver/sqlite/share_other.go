//go:build !unix

package sqlite

// Elsewhere (Windows, WASI) another process's liveness is not checked.
func pidAlive(int) liveness { return unknown }
