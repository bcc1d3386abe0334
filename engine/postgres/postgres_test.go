//go:build !js && !wasip1

package postgres_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/engine"
	_ "github.com/agentstate/agentstate/engine/postgres"
)

const pkg = "github.com/agentstate/agentstate/engine/postgres"

// goCmd runs the go command of the toolchain that built the test, in this
// package's directory, without cgo.
func goCmd(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
	}
	return string(out)
}

// jackc lists the packages of github.com/jackc/ that the program or
// package p links.
func jackc(t *testing.T, p string) (deps []string, jackc []string) {
	deps = strings.Fields(goCmd(t, "list", "-deps", p))
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/jackc/") {
			jackc = append(jackc, d)
		}
	}
	return deps, jackc
}

// A program that imports the engine and not this package links no
// PostgreSQL client; one that imports this package does (so that the check
// can tell).
func TestSQLiteOnlyProgramLinksNoPgx(t *testing.T) {
	deps, pgx := jackc(t, "./testdata/sqliteonly")
	if !strings.Contains(" "+strings.Join(deps, " ")+" ", " github.com/agentstate/agentstate/engine ") {
		t.Fatalf("go list -deps ./testdata/sqliteonly does not list the engine:\n%s", strings.Join(deps, "\n"))
	}
	if len(pgx) > 0 {
		t.Errorf("a program importing only the engine links %d packages of github.com/jackc/ (%s): the engine must reach PostgreSQL only through %s", len(pgx), strings.Join(pgx, ", "), pkg)
	}
	if _, pgx := jackc(t, "."); len(pgx) == 0 {
		t.Errorf("go list -deps %s lists no github.com/jackc/ package: the check above cannot tell", pkg)
	}
}

// Without this package, Open of a postgres:// URL is a refused argument
// that names the package to import (and not the URL's password).
func TestOpenWithoutThePackage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program of the engine")
	}
	bin := filepath.Join(t.TempDir(), "sqliteonly")
	goCmd(t, "build", "-o", bin, "./testdata/sqliteonly")
	for _, url := range []string{"postgres://u:secret@127.0.0.1:1/db", "postgresql://u@127.0.0.1:1/db?password=secret"} {
		out, err := exec.Command(bin, url).CombinedOutput()
		msg := string(out)
		if err == nil || !strings.HasPrefix(msg, "invalid-argument: ") {
			t.Errorf("%s: %v %q, want ErrInvalidArgument", url, err, msg)
		}
		if !strings.Contains(msg, `import _ "`+pkg+`"`) {
			t.Errorf("%s: %q does not say to import %s", url, msg, pkg)
		}
		if strings.Contains(msg, "secret") {
			t.Errorf("%s: %q shows the password", url, msg)
		}
	}
}

// With this package, Open of a postgres:// URL reaches for the server:
// nothing listens on port 1, so it fails, and not for want of a driver.
func TestOpenWithThePackage(t *testing.T) {
	_, err := engine.Open(context.Background(), "postgres://u:secret@127.0.0.1:1/db?connect_timeout=5", nil)
	if err == nil {
		t.Fatal("Open of a server that does not listen succeeded")
	}
	if strings.Contains(err.Error(), pkg) || strings.Contains(err.Error(), "secret") {
		t.Errorf("Open: %v", err)
	}
	if errors.Is(err, engine.ErrInvalidArgument) {
		t.Errorf("Open: %v: a refused argument, want a failure to connect", err)
	}
}
