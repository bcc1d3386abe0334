package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress prints a carriage-return status line on a terminal, at most a
// few times a second, and nothing on a pipe or when output is JSON.
type progress struct {
	w       io.Writer
	enabled bool
	last    time.Time
	shown   bool
}

func newProgress(w io.Writer, quiet bool) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok && !quiet {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.enabled = true
		}
	}
	return p
}

func (p *progress) show(format string, args ...any) {
	if !p.enabled || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	fmt.Fprintf(p.w, "\r\033[K"+format, args...)
	p.shown = true
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
		p.shown = false
	}
}
