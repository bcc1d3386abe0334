//go:build unix

package engine

import (
	"os"
	"syscall"
)

// lowestPriority makes this process the last to get a CPU (nice 19).
func lowestPriority() error { return syscall.Setpriority(syscall.PRIO_PROCESS, 0, 19) }

// pause stops (SIGSTOP) or continues (SIGCONT) a process.
func pause(p *os.Process, stop bool) error {
	if stop {
		return p.Signal(syscall.SIGSTOP)
	}
	return p.Signal(syscall.SIGCONT)
}
