//go:build !unix

package engine

// processCPU is not measured where the platform has no getrusage.
func processCPU() int64 { return 0 }
