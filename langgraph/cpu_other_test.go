//go:build !unix

package langgraph

// processCPU is not measured where the platform has no getrusage.
func processCPU() int64 { return 0 }
