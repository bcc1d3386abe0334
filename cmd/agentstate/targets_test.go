package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestEveryPackageBuildsForEveryTarget: every package of the module builds
// for each target the README names (native, GOOS=wasip1 for the WASI CLI
// and, with hostsqlite, the Python package's reactor, GOOS=js for the npm
// package's engine); this command once did not build
// for js (engine.HeldError existed only in native builds).
func TestEveryPackageBuildsForEveryTarget(t *testing.T) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, target := range []struct{ goos, goarch, tags string }{
		{"js", "wasm", ""},
		{"wasip1", "wasm", "sqlite3_dotlk"},
		{"wasip1", "wasm", "hostsqlite"}, // the Python package's reactor, on its host's SQLite
	} {
		cmd := exec.Command(goBin, "build", "-tags="+target.tags, "./...")
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "GOOS="+target.goos, "GOARCH="+target.goarch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s GOARCH=%s go build -tags=%q ./...: %v\n%s", target.goos, target.goarch, target.tags, err, out)
		}
	}
}
