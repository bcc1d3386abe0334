package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/records"
)

// copyFile copies a fixture so that a command may change the copy.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func langGraphFixture(t *testing.T) string {
	return copyFile(t, filepath.Join("..", "..", "testdata", "langgraph", "langgraph-js.sqlite"))
}

// TestExitCodes holds every command to one rule: 0 ok, 1 the operation
// failed or found problems (a missing file or thread is a failure), 2 a
// usage error. An error is printed once: one line naming the command, and
// for a usage error a second line with the command's synopsis; the
// engine's "agentstate: " is not repeated after the command's prefix.
func TestExitCodes(t *testing.T) {
	path, cps := fixture(t, channels.ModeDelta)
	dump := agentstate(t, nil, "export", "--quiet", path).stdout
	dir := t.TempDir()
	fresh := func() string { return filepath.Join(t.TempDir(), "new.db") }
	missing := filepath.Join(dir, "missing.db")
	src := langGraphFixture(t)
	imported := fresh()
	if r := agentstate(t, nil, "import-langgraph", src, imported); r.code != 0 {
		t.Fatalf("import-langgraph: %s", r.stderr)
	}

	type tc struct {
		code  int
		stdin string
		args  []string
	}
	cases := []tc{
		// 0: it worked.
		{0, "", []string{"info", path}},
		{0, "", []string{"stats", path}},
		{0, "", []string{"threads", path}},
		{0, "", []string{"state", path, "chat"}},
		{0, "", []string{"history", path, "chat"}},
		{0, "", []string{"history", path, "chat", "--before", cps[0].CheckpointID}}, // the oldest but the root: one line
		{0, "", []string{"runs", path, "chat"}},
		{0, "", []string{"runs", path, "other"}}, // a known thread without runs: an empty list
		{0, "", []string{"events", path, "chat"}},
		{0, "", []string{"events", path, "chat", "--run", "run-1"}},
		{0, "", []string{"tokens", path, "chat"}},
		{0, "", []string{"verify", path}},
		{0, "", []string{"verify", path, "--thread", "chat"}},
		{0, "", []string{"retain", path}},
		{0, "", []string{"vacuum", copyFile(t, path)}},
		{0, "", []string{"convert", copyFile(t, path), "--mode", "full"}},
		{0, "", []string{"export", path, "--thread", "chat"}},
		{0, dump, []string{"import", fresh()}},
		{0, "", []string{"import-langgraph", src, fresh()}},
		{0, "", []string{"export-langgraph", imported, filepath.Join(t.TempDir(), "out.sqlite")}},
		{0, "", []string{"demo", "--db", fresh()}},
		{0, "", []string{"bench", "--turns", "2", "--mode", "delta"}},
		{0, "", []string{"upgrade", copyFile(t, path)}},
		{0, "", []string{"version"}},
		{0, "", []string{"--version"}},
		{0, "", []string{"help"}},

		// 1: the operation failed.
		{1, "", []string{"state", path, "nosuch"}},
		{1, "", []string{"history", path, "nosuch"}},
		{1, "", []string{"history", path, "chat", "--before", "bogus"}},
		{1, "", []string{"runs", path, "nosuch"}},
		{1, "", []string{"events", path, "nosuch"}},
		{1, "", []string{"events", path, "chat", "--run", "nosuch"}},
		{1, "", []string{"tokens", path, "nosuch"}},
		{1, "", []string{"verify", path, "--thread", "nosuch"}},
		{1, "", []string{"retain", path, "--thread", "nosuch"}},
		{1, "", []string{"convert", copyFile(t, path), "--thread", "nosuch", "--mode", "full"}},
		{1, "", []string{"export", path, "--thread", "nosuch"}},
		{1, "", []string{"info", dir}},
		{1, dump, []string{"import", dir}},
		{1, dump, []string{"import", copyFile(t, path)}}, // the rows exist
		{1, "", []string{"import-langgraph", missing, fresh()}},
		{1, "", []string{"export-langgraph", path, filepath.Join(t.TempDir(), "out.sqlite")}}, // a thread API file
		{1, "", []string{"demo", "--db", dir}},
		{1, "", []string{"bench", "--plot", filepath.Join(dir, "no", "such", "dir", "x.svg")}},
		{1, "", []string{"upgrade", missing}},

		// 2: usage.
		{2, "", nil},
		{2, "", []string{"frobnicate"}},
		{2, "", []string{"info"}},
		{2, "", []string{"info", path, "extra"}},
		{2, "", []string{"info", path, "--threads", "-1"}},
		{2, "", []string{"threads", path, "--limit", "-3"}},
		{2, "", []string{"threads", path, "--limit", "1001"}},
		{2, "", []string{"threads", path, "--offset", "-1"}},
		{2, "", []string{"threads", path, "--status", "bogus"}},
		{2, "", []string{"threads", path, "--meta", "bad key=1"}},
		{2, "", []string{"state", path}},
		{2, "", []string{"state", path, ""}},
		{2, "", []string{"history", path, "chat", "--limit", "-1"}},
		{2, "", []string{"runs", path}},
		{2, "", []string{"events", path}},
		{2, "", []string{"tokens", path}},
		{2, "", []string{"verify", path, "--max", "0"}},
		{2, "", []string{"retain", path, "--keep-latest", "-2"}},
		{2, "", []string{"vacuum"}},
		{2, "", []string{"convert", path}},
		{2, "", []string{"convert", path, "--mode", "sideways"}},
		{2, "", []string{"convert", path, "--mode", "delta", "--every", "0"}},
		{2, "", []string{"export"}},
		{2, "", []string{"import"}},
		{2, "", []string{"import-langgraph", src}},
		{2, "", []string{"export-langgraph", imported}},
		{2, "", []string{"import-langgraph", src, fresh(), "--mode", "sideways"}},
		{2, "", []string{"demo", "extra"}},
		{2, "", []string{"bench", "--turns", "0"}},
		{2, "", []string{"bench", "--mode", "sideways"}},
		{2, "", []string{"bench", "--db", fresh()}}, // --db needs one mode
		{2, "", []string{"upgrade"}},
		{2, "", []string{"version", "extra"}},
	}
	// Every command: an unknown flag is a usage error, and so is a missing
	// file for every command that reads one (exit 1).
	for _, c := range commands {
		cases = append(cases, tc{2, "", []string{c.name, "--no-such-flag"}})
	}
	for _, name := range []string{"info", "stats", "threads", "verify", "retain", "vacuum", "export", "upgrade"} {
		cases = append(cases, tc{1, "", []string{name, missing}})
	}
	for _, name := range []string{"state", "history", "runs", "events", "tokens"} {
		cases = append(cases, tc{1, "", []string{name, missing, "chat"}})
	}
	cases = append(cases, tc{1, "", []string{"convert", missing, "--mode", "full"}})

	covered := map[string]map[int]bool{}
	for _, c := range cases {
		var stdin []byte
		if c.stdin != "" {
			stdin = []byte(c.stdin)
		}
		r := agentstate(t, stdin, c.args...)
		if r.code != c.code {
			t.Errorf("agentstate %q: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.args, r.code, c.code, r.stdout, r.stderr)
			continue
		}
		name := "-"
		if len(c.args) > 0 {
			name = c.args[0]
		}
		if covered[name] == nil {
			covered[name] = map[int]bool{}
		}
		covered[name][c.code] = true
		lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
		switch {
		case c.code == 1:
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "agentstate "+name+": ") {
				t.Errorf("agentstate %q: want one error line, got:\n%s", c.args, r.stderr)
			}
		case c.code == 2 && name != "-" && name != "frobnicate":
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "agentstate "+name+": ") || !strings.HasPrefix(lines[1], "usage: agentstate "+name) {
				t.Errorf("agentstate %q: want an error line and a usage line, got:\n%s", c.args, r.stderr)
			}
		}
		if strings.Contains(r.stderr, ": agentstate: ") || strings.Contains(r.stderr, "expected 1 to") {
			t.Errorf("agentstate %q: repeated prefix or unclear count:\n%s", c.args, r.stderr)
		}
		if c.code != 0 && (name == "export" || name == "runs" || name == "events" || name == "tokens" || name == "verify") && r.stdout != "" {
			t.Errorf("agentstate %q failed after printing:\n%s", c.args, r.stdout)
		}
	}
	// The table covers every command, each with a usage error and (but
	// for version and help) a success.
	for _, c := range commands {
		if !covered[c.name][0] || !covered[c.name][2] {
			t.Errorf("the table has no success or no usage error for %s: %v", c.name, covered[c.name])
		}
	}
}

// run runs a command line as a user would paste it into a shell, in dir,
// with the test binary on PATH as "agentstate".
func runShell(t *testing.T, dir, line string) result {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("sh -c %q: %v", line, err)
	}
	return r
}

var suggested = regexp.MustCompile(`agentstate (?:convert|upgrade|import-langgraph|export) [^()]*?(?:$|\)|, then)`)

// suggestion returns the one command an error suggests, as printed.
func suggestion(t *testing.T, stderr string) string {
	t.Helper()
	m := suggested.FindAllString(strings.TrimSpace(stderr), -1)
	if len(m) != 1 {
		t.Fatalf("want one suggested command in:\n%s", stderr)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(m[0], ", then"), ")")
	return strings.TrimSpace(s)
}

// TestSuggestedCommandsWork: every error that suggests a command suggests
// one that works as printed; the test pastes it into a shell and retries.
func TestSuggestedCommandsWork(t *testing.T) {
	spaced := filepath.Join(t.TempDir(), "my files")
	if err := os.Mkdir(spaced, 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("import: the dump's K is not the file's", func(t *testing.T) {
		path, _ := fixture(t, channels.ModeDelta) // K=3
		dump := []byte(agentstate(t, nil, "export", "--quiet", path).stdout)
		dst := filepath.Join(spaced, "k10's.db")
		want(t, agentstate(t, nil, "bench", "--turns", "1", "--mode", "delta", "--every", "10", "--db", dst), 0)
		r := agentstate(t, dump, "import", dst)
		want(t, r, 1)
		contains(t, r.stderr, "the dump is in delta mode with K=3", "is in delta mode with K=10")
		line := suggestion(t, r.stderr)
		if !strings.Contains(line, "--every 3") {
			t.Fatalf("the suggestion does not give the dump's K: %s", line)
		}
		want(t, runShell(t, "/", line), 0)
		want(t, agentstate(t, dump, "import", dst), 0)
		want(t, agentstate(t, nil, "verify", dst), 0)
	})

	t.Run("import-langgraph: --mode is not the file's", func(t *testing.T) {
		src := langGraphFixture(t)
		dst := filepath.Join(spaced, "lg.db")
		want(t, agentstate(t, nil, "demo", "--db", dst), 0) // delta, K=4
		r := agentstate(t, nil, "import-langgraph", src, dst, "--mode", "full")
		want(t, r, 1)
		contains(t, r.stderr, "is in delta mode with K=4, not full mode")
		want(t, runShell(t, "/", suggestion(t, r.stderr)), 0)
		want(t, agentstate(t, nil, "import-langgraph", src, dst, "--mode", "full"), 0)
	})

	t.Run("convert: one thread to delta in a full file", func(t *testing.T) {
		path := copyFile(t, func() string { p, _ := fixture(t, channels.ModeFull); return p }())
		r := agentstate(t, nil, "convert", path, "--thread", "chat", "--mode", "delta")
		want(t, r, 1)
		contains(t, r.stderr, "cannot hold a delta thread")
		want(t, runShell(t, "/", suggestion(t, r.stderr)), 0)
		contains(t, agentstate(t, nil, "info", path).stdout, "delta (K=")
	})

	t.Run("schema v1: read-only commands point to upgrade", func(t *testing.T) {
		old := filepath.Join(spaced, "old.db")
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "schema_v1.db"))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(old, b, 0o644)
		for _, cmd := range [][]string{{"info", old}, {"verify", old}, {"threads", old}, {"state", old, "fixture-thread"}} {
			r := agentstate(t, nil, cmd...)
			want(t, r, 1)
			contains(t, r.stderr, "older agentstate", "agentstate upgrade")
		}
		after, _ := os.ReadFile(old)
		if !bytes.Equal(after, b) {
			t.Fatal("a read-only command changed the old file")
		}
		r := agentstate(t, nil, "info", old)
		u := runShell(t, "/", suggestion(t, r.stderr))
		want(t, u, 0)
		contains(t, u.stdout, "upgraded to schema version")
		contains(t, agentstate(t, nil, "info", old).stdout, "schema version")
		again := agentstate(t, nil, "upgrade", old)
		want(t, again, 0)
		contains(t, again.stdout, "nothing to do")
	})

	t.Run("info: a LangGraph SqliteSaver file points to import-langgraph", func(t *testing.T) {
		src := filepath.Join(spaced, "lg chat.sqlite")
		b, err := os.ReadFile(langGraphFixture(t))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(src, b, 0o644)
		r := agentstate(t, nil, "info", src)
		want(t, r, 1)
		contains(t, r.stderr, "not an agentstate database", "is a LangGraph SqliteSaver file")
		want(t, runShell(t, "/", suggestion(t, r.stderr)), 0)
		want(t, agentstate(t, nil, "verify", filepath.Join(spaced, "lg chat.agentstate.db")), 0)
	})

	t.Run("import-langgraph: an agentstate file as SRC is named, not DST", func(t *testing.T) {
		src, _ := fixture(t, channels.ModeDelta)
		dst := filepath.Join(spaced, "copy.db")
		r := agentstate(t, nil, "import-langgraph", src, dst)
		want(t, r, 1)
		if first := strings.SplitN(r.stderr, "\n", 2)[0]; !strings.HasPrefix(first, "agentstate import-langgraph: ") || !strings.Contains(first, src) || strings.Contains(first, dst) {
			t.Fatalf("the error does not name SRC first, or blames DST:\n%s", r.stderr)
		}
		contains(t, r.stderr, "is not a LangGraph SqliteSaver file", "is an agentstate file already")
		if exists(dst) {
			t.Fatal("a refused import created DST")
		}
		want(t, runShell(t, "/", suggestion(t, r.stderr)), 0)
		want(t, agentstate(t, nil, "verify", dst), 0)
	})

	t.Run("empty file", func(t *testing.T) {
		empty := filepath.Join(t.TempDir(), "empty.db")
		os.WriteFile(empty, nil, 0o644)
		for _, cmd := range []string{"info", "verify", "vacuum", "upgrade"} {
			r := agentstate(t, nil, cmd, empty)
			want(t, r, 1)
			contains(t, r.stderr, "is empty (0 bytes)")
		}
		if fi, _ := os.Stat(empty); fi.Size() != 0 {
			t.Fatal("a command wrote to the empty file")
		}
	})
}

// TestDemoSuggestsACommandThatWorks: after `go run ./cmd/agentstate demo`
// there is no agentstate binary anywhere; the demo's last line must still
// work when pasted, from the directory the demo ran in. The same for a
// binary run through PATH and through a path.
func TestDemoSuggestsACommandThatWorks(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "demo db's.db")
	lastLine := func(out string) string {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		l := lines[len(lines)-1]
		if !strings.HasPrefix(l, "Look around: ") {
			t.Fatalf("demo's last line: %q", l)
		}
		return strings.TrimPrefix(l, "Look around: ")
	}
	// go run, from the repository root, with no agentstate on PATH.
	goRun := exec.Command("go", "run", "./cmd/agentstate", "demo", "--db", db)
	goRun.Dir = root
	out, err := goRun.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./cmd/agentstate demo: %v\n%s", err, out)
	}
	line := lastLine(string(out))
	if !strings.HasPrefix(line, "go run ./cmd/agentstate info ") {
		t.Fatalf("after go run the demo suggests %q", line)
	}
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir = root
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "schema version") {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	// Through PATH: "agentstate".
	r := runShell(t, t.TempDir(), "agentstate demo --db "+shellQuote(db))
	want(t, r, 0)
	line = lastLine(r.stdout)
	if !strings.HasPrefix(line, "agentstate info ") {
		t.Fatalf("through PATH the demo suggests %q", line)
	}
	want(t, runShell(t, t.TempDir(), line), 0)
	// Through a path: that path.
	r = agentstate(t, nil, "demo", "--db", db)
	line = lastLine(r.stdout)
	if !strings.HasPrefix(line, binary+" info ") {
		t.Fatalf("through a path the demo suggests %q", line)
	}
	want(t, runShell(t, t.TempDir(), line), 0)
}

func TestVersion(t *testing.T) {
	r := agentstate(t, nil, "--version")
	want(t, r, 0)
	contains(t, r.stdout, "agentstate ", "schema version "+strconv.Itoa(engine.SchemaVersion), "built with "+runtime.Version())
	if v := agentstate(t, nil, "version"); v.stdout != r.stdout {
		t.Fatalf("version and --version differ:\n%s\n%s", v.stdout, r.stdout)
	}
	j := agentstate(t, nil, "version", "--json")
	want(t, j, 0)
	var v versionInfo
	if err := json.Unmarshal([]byte(j.stdout), &v); err != nil || v.SchemaVersion != engine.SchemaVersion || v.ExportFormat != engine.ExportFormat ||
		v.Go != runtime.Version() || v.Module != "github.com/agentstate/agentstate" {
		t.Fatalf("version --json: %v %+v", err, v)
	}
}

// TestBenchPlotPathCheckedFirst: a plot that cannot be written fails
// before the bench runs (it prints nothing), and a plot file this run
// created is not left behind when the bench fails.
func TestBenchPlotPathCheckedFirst(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "no-such-dir", "x.svg")
	r := agentstate(t, nil, "bench", "--plot", bad) // 400 turns if it ran
	want(t, r, 1)
	contains(t, r.stderr, bad)
	if r.stdout != "" {
		t.Fatalf("the bench ran before the plot path was checked:\n%s", r.stdout)
	}
	exists := filepath.Join(t.TempDir(), "exists.db")
	want(t, agentstate(t, nil, "demo", "--db", exists), 0)
	plot := filepath.Join(t.TempDir(), "plot.svg")
	r = agentstate(t, nil, "bench", "--turns", "2", "--mode", "delta", "--db", exists, "--plot", plot)
	want(t, r, 1)
	if _, err := os.Stat(plot); err == nil {
		t.Fatal("a failed bench left the plot file it created")
	}
	r = agentstate(t, nil, "bench", "--turns", "2", "--plot", plot)
	want(t, r, 0)
	if b, err := os.ReadFile(plot); err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
		t.Fatalf("plot: %v %.40q", err, b)
	}
}

// TestStateExplainsUnresolved: a LangGraph.js checkpoint names channels
// (__start__, branch:to:agent) with a version and no value; state says
// why on stderr, and --json stays one clean object.
func TestStateExplainsUnresolved(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lg.db")
	db, err := engine.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := json.Marshal([]map[string]any{{"type": "human", "content": "hi"}})
	_, err = db.Put(ctx, engine.Config{ThreadID: "t1"}, engine.Checkpoint{V: 4, ID: "1f0c0000-0000-6000-8000-000000000001", TS: "2026-01-01T00:00:00Z",
		ChannelValues:   map[string]codec.Blob{"messages": {Type: "json", Data: msgs}},
		ChannelVersions: map[string]string{"__start__": "1", "branch:to:agent": "2", "messages": "2"},
		VersionsSeen:    map[string]map[string]string{}}, engine.Metadata{"source": "loop", "step": 1},
		map[string]string{"messages": "2", "branch:to:agent": "2"})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := agentstate(t, nil, "state", path, "t1")
	want(t, r, 0)
	contains(t, r.stdout, `"unresolved"`, "__start__")
	contains(t, r.stderr, "note: __start__, branch:to:agent have a version but no value", "empty channel")
	j := agentstate(t, nil, "state", path, "t1", "--json")
	want(t, j, 0)
	if j.stderr != "" || len(jsonLines(t, j.stdout)) != 1 {
		t.Fatalf("state --json: %q %q", j.stdout, j.stderr)
	}
}

// TestTokensTotalsMatchByModel: a run completed with only TotalTokens and
// a by-model breakdown (the README's example) shows input and output
// totals that agree with the breakdown.
func TestTokensTotalsMatchByModel(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tokens.db")
	db, err := engine.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := db.Runs().Create(ctx, records.NewRun{ThreadID: "t1", ModelName: "gpt-x", Status: records.RunRunning})
	if err == nil {
		err = db.Runs().Complete(ctx, c.Run.RunID, records.RunSuccess, "", records.RunTotals{TotalTokens: 15,
			TokenUsageByModel: map[string]records.ModelTokens{"gpt-x": {Input: 12, Output: 3, Total: 15}}})
	}
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	r := agentstate(t, nil, "tokens", path, "t1")
	want(t, r, 0)
	contains(t, r.stdout, "15 tokens (12 input, 3 output)")
	if !regexp.MustCompile(`gpt-x\s+1\s+12\s+3\s+15`).MatchString(r.stdout) {
		t.Fatalf("by-model row:\n%s", r.stdout)
	}
}

// TestTroubleshootingQuotesTheCLI: docs/troubleshooting.md's rows that
// quote the CLI quote what it prints, in the situation the row describes
// (run in a directory of files named as the rows name them). A "..." in a
// quote separates fragments that must each appear.
func TestTroubleshootingQuotesTheCLI(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	section := string(page)
	quote := regexp.MustCompile("^\\| `([^`]+)`")
	var quotes []string
	for _, l := range strings.Split(section, "\n") {
		if m := quote.FindStringSubmatch(l); m != nil {
			quotes = append(quotes, m[1])
		}
	}
	dir := t.TempDir()
	inDir := func(stdin []byte, args ...string) result {
		t.Helper()
		return agentstateIn(t, dir, stdin, args...)
	}
	copyTo := func(src, name string) {
		t.Helper()
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Each situation, keyed by how its row's quote begins.
	situations := map[string]func() result{
		"channel mode mismatch: agent.db": func() result {
			want(t, inDir(nil, "demo", "--db", "agent.db"), 0) // delta, K=4
			return inDir(nil, "import-langgraph", langGraphFixture(t), "agent.db", "--mode", "full")
		},
		"agentstate import: channel mode mismatch": func() result {
			want(t, inDir(nil, "bench", "--turns", "1", "--mode", "delta", "--every", "10", "--db", "b.db"), 0)
			return inDir([]byte(inDir(nil, "export", "--quiet", "agent.db").stdout), "import", "b.db")
		},
		"... was written by an older agentstate": func() result {
			copyTo(filepath.Join("..", "..", "testdata", "schema_v1.db"), "FILE")
			defer os.Remove(filepath.Join(dir, "FILE"))
			return inDir(nil, "info", "FILE")
		},
		"FILE is empty": func() result {
			os.WriteFile(filepath.Join(dir, "FILE"), nil, 0o644)
			defer os.Remove(filepath.Join(dir, "FILE"))
			return inDir(nil, "info", "FILE")
		},
		"not an agentstate database": func() result {
			copyTo(langGraphFixture(t), "lg.sqlite")
			return inDir(nil, "info", "lg.sqlite")
		},
		"database schema is newer": func() result {
			copyTo(filepath.Join(dir, "agent.db"), "new.db")
			rawExec(t, filepath.Join(dir, "new.db"), "PRAGMA user_version = 999")
			return inDir(nil, "info", "new.db")
		},
		"not found: no thread": func() result { return inDir(nil, "state", "agent.db", "t1") },
	}
	order := []string{"channel mode mismatch: agent.db", "agentstate import: channel mode mismatch", "... was written by an older agentstate",
		"FILE is empty", "not an agentstate database", "database schema is newer", "not found: no thread"}
	for _, key := range order {
		i := slices.IndexFunc(quotes, func(q string) bool { return strings.HasPrefix(q, key) })
		if i < 0 {
			t.Errorf("the Troubleshooting table has no row quoting %q", key)
			continue
		}
		r := situations[key]()
		if r.code != 1 {
			t.Errorf("%q: exit %d, want 1\n%s", key, r.code, r.stderr)
		}
		for _, frag := range strings.Split(quotes[i], "...") {
			if frag = strings.TrimSpace(frag); frag != "" && !strings.Contains(r.stderr, frag) {
				t.Errorf("docs/troubleshooting.md quotes %q, the CLI prints:\n%s", quotes[i], r.stderr)
			}
		}
	}
}
