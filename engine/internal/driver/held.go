package driver

// Holder and HeldError are the sqlite driver's (share.go: one file shared
// with the npm package), declared here, with no SQLite behind them, so that
// every build of the engine has them: the GOOS=js build never returns a
// HeldError (its host keeps processes apart) but code matching one builds.

import (
	"fmt"
	"strings"
)

// Holder is a process that has a database file open, as its registration
// file records it.
type Holder struct {
	Runtime string `json:"runtime"` // "node", "native", "wasi" or "python"
	PID     int    `json:"pid,omitempty"`
	Host    string `json:"host,omitempty"`
	Since   string `json:"since,omitempty"`
	Program string `json:"program,omitempty"`
}

func (h Holder) String() string {
	var b strings.Builder
	b.WriteString(h.Runtime)
	if h.Runtime == "" {
		b.WriteString("another process")
	}
	if h.Program != "" {
		fmt.Fprintf(&b, " (%s)", h.Program)
	}
	if h.PID > 0 {
		fmt.Fprintf(&b, " pid %d", h.PID)
	}
	if h.Host != "" {
		fmt.Fprintf(&b, " on host %s", h.Host)
	}
	if h.Since != "" {
		fmt.Fprintf(&b, " since %s", h.Since)
	}
	return b.String()
}

// HeldError reports a database file open in a JavaScript process. It is
// also a driver.ErrBusy.
type HeldError struct {
	Path   string // the database file
	Record string // the file that records the holder
	Holder Holder
	Stale  string // advice when the holder cannot be checked, or ""
}

func (e *HeldError) Error() string {
	msg := fmt.Sprintf("%s is open in %s; a JavaScript process and the native engine cannot have one file open at once: close it there first", e.Path, e.Holder)
	if e.Stale != "" {
		msg += "; " + e.Stale
	}
	return msg
}

func (e *HeldError) Unwrap() error { return ErrBusy }
