//go:build wasicrash

package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/channels"
)

// Built only with -tags wasicrash: .ci/run builds the wasip1 children this
// test needs and runs it on its own, so a plain go test neither needs Node
// nor reports a skip.

// wasiRunner runs a GOOS=wasip1 test binary under Node's WASI with DIR
// preopened as /data and the AGENTSTATE_ variables passed on.
const wasiRunner = `import fs from "node:fs";
import v8 from "node:v8";
import { WASI } from "node:wasi";
const [dir, wasmPath, ...args] = process.argv.slice(2);
v8.setFlagsFromString("--wasm-max-mem-pages=65536");
const env = { PWD: "/data", HOME: "/data", TMPDIR: "/data" };
for (const [k, v] of Object.entries(process.env)) if (k.startsWith("AGENTSTATE_")) env[k] = v;
const wasi = new WASI({ version: "preview1", args: ["engine.test", ...args], env, preopens: { "/data": dir }, returnOnExit: true });
const module = await WebAssembly.compile(fs.readFileSync(wasmPath));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
`

// TestCrashKillWASI is TestCrashKill with the children built for
// GOOS=wasip1 (the engine's test binary, sqlite3_dotlk) and run under
// Node's WASI: .ci/run builds the binary and names it in
// AGENTSTATE_WASI_ENGINE_TEST. The parent checks the file natively. A
// killed WASI process leaves its dot-locks ("<db>.lock", the "<db>-shm"
// directory); no process holds them, so they are removed before the next
// open, as wasm/wasi/run.mjs does for the CLI.
func TestCrashKillWASI(t *testing.T) {
	sqliteOnly(t, "the children are the wasip1 build, which has SQLite only")
	bin := os.Getenv("AGENTSTATE_WASI_ENGINE_TEST")
	if bin == "" {
		t.Fatal("set AGENTSTATE_WASI_ENGINE_TEST to a GOOS=wasip1 build of this package's tests (.ci/run does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("AGENTSTATE_WASI_ENGINE_TEST is set but node is not installed: %v", err)
	}
	dir := t.TempDir()
	runner := filepath.Join(dir, "run-wasi.mjs")
	if err := os.WriteFile(runner, []byte(wasiRunner), 0o644); err != nil {
		t.Fatal(err)
	}
	staleLocks := 0
	files := func(epoch int) []*crashLog {
		var logs []*crashLog
		for _, mode := range []channels.Mode{channels.ModeDelta, channels.ModeFull} {
			name := fmt.Sprintf("%s%d.db", mode, epoch)
			host := filepath.Join(dir, name)
			logs = append(logs, &crashLog{
				path: "/data/" + name, hostPath: host, mode: mode,
				command: func(string) *exec.Cmd { return exec.Command(node, "--no-warnings", runner, dir, bin, "-test.run=^$") },
				prepare: func() error {
					for _, stale := range []string{host + ".lock", host + "-shm"} {
						if fi, err := os.Stat(stale); err == nil && (fi.IsDir() || strings.HasSuffix(stale, ".lock")) {
							staleLocks++
							if err := os.RemoveAll(stale); err != nil {
								return err
							}
						}
					}
					return nil
				},
			})
		}
		return logs
	}
	// A WASI child takes a second or more to start and ~50ms a step: kill
	// it within 1.5s of READY.
	crashRounds(t, files, relScale(20, 4, 200), func(rng *rand.Rand) (time.Duration, bool) {
		return time.Duration(rng.IntN(1500)) * time.Millisecond, true
	})
	t.Logf("%d stale dot-locks left by killed WASI processes were removed", staleLocks)
	if staleLocks == 0 {
		t.Fatal("no kill left a dot-lock behind: the children were never killed while they held the file")
	}
}
