package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/agentstate/agentstate/internal/testmedia"
	"github.com/agentstate/agentstate/langgraph"
	"github.com/ncruces/go-sqlite3"
)

// binary is the agentstate command, built once for the whole test run.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "agentstate-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "agentstate")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// agentstate runs the binary with stdin, stdout and stderr on pipes, and
// checks that no progress line ever reaches them.
func agentstate(t *testing.T, stdin []byte, args ...string) result {
	t.Helper()
	return agentstateIn(t, "", stdin, args...)
}

// agentstateIn is agentstate run in directory dir ("": the test's own).
func agentstateIn(t *testing.T, dir string, stdin []byte, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentstate %v: %v", args, err)
	}
	if strings.ContainsAny(r.stdout+r.stderr, "\r\x1b") {
		t.Fatalf("agentstate %v printed a progress line on a pipe:\n%q\n%q", args, r.stdout, r.stderr)
	}
	return r
}

func want(t *testing.T, r result, code int, args ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
}

func contains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("output has no %q:\n%s", sub, s)
		}
	}
}

// jsonLines decodes every line of s as a JSON object.
func jsonLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not a JSON line: %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// fixture writes a file through the engine that uses every surface: a
// thread-API conversation with a fork, a hidden image message and a
// compaction; thread records for alice and bob; a finished run with tokens;
// events; a store item. It returns the path and the chat checkpoints.
func fixture(t *testing.T, mode channels.Mode) (string, []engine.Config) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "agent.db")
	o := engine.DefaultOptions()
	o.Mode, o.SnapshotEvery = mode, 3
	db, err := engine.Open(ctx, path, &o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var cps []engine.Config
	commit := func(parent string, ms ...codec.Message) {
		t.Helper()
		cfg, err := db.Commit(ctx, "chat", engine.Step{Parent: parent, RunID: "run-1",
			Tasks: []engine.TaskWrites{{TaskID: "node", Writes: []engine.ChannelWrite{{Channel: engine.MessagesChannel, Value: ms}}}}})
		if err != nil {
			t.Fatal(err)
		}
		cps = append(cps, cfg)
	}
	for i := range 9 {
		commit("", codec.Message{ID: fmt.Sprintf("h%d", i), Type: codec.Human, Content: fmt.Sprintf("question %d", i)},
			codec.Message{ID: fmt.Sprintf("a%d", i), Type: codec.AI, Content: fmt.Sprintf("answer %d", i)})
	}
	fork, err := db.Fork(ctx, cps[2])
	if err != nil {
		t.Fatal(err)
	}
	cps = append(cps, fork)
	commit(fork.CheckpointID, codec.Message{ID: "img", Type: codec.Human, AdditionalKwargs: map[string]any{engine.HideFromUIKey: true},
		Content: []any{map[string]any{"type": "text", "text": "see"}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,SECRET"}}}})
	c, err := db.Compact(ctx, engine.Config{ThreadID: "chat"}, engine.MessagesChannel, []codec.Message{{ID: "sum", Type: codec.System, Content: "summary"}})
	if err != nil {
		t.Fatal(err)
	}
	cps = append(cps, c)
	commit("", codec.Message{ID: "last", Type: codec.Human, Content: "after the summary"})

	if _, err := db.Threads().Create(ctx, engine.User("alice"), records.NewThread{ThreadID: "chat", DisplayName: "Trip plan", Metadata: map[string]any{"topic": "travel", "pinned": true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Threads().Create(ctx, engine.User("bob"), records.NewThread{ThreadID: "other", DisplayName: "Other", Status: records.ThreadBusy, Metadata: map[string]any{"topic": "misc"}}); err != nil {
		t.Fatal(err)
	}
	run, err := db.Runs().Create(ctx, records.NewRun{RunID: "run-1", ThreadID: "chat", ModelName: "model-a", Status: records.RunRunning})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Events().PutBatch(ctx, []records.Event{
		{ThreadID: "chat", RunID: run.Run.RunID, EventType: "llm.human.input", Category: records.CategoryMessage, Content: "question 0"},
		{ThreadID: "chat", RunID: run.Run.RunID, EventType: "tool.call", Category: "trace", Content: map[string]any{"tool": "search"}},
		{ThreadID: "chat", RunID: run.Run.RunID, EventType: "llm.ai.response", Category: records.CategoryMessage, Content: "answer 0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Runs().Complete(ctx, run.Run.RunID, records.RunSuccess, "", records.RunTotals{TotalInputTokens: 30, TotalOutputTokens: 12, TotalTokens: 42,
		LLMCallCount: 3, LeadAgentTokens: 40, MiddlewareTokens: 2,
		TokenUsageByModel: map[string]records.ModelTokens{"model-a": {Input: 20, Output: 10, Total: 30}, "model-b": {Input: 10, Output: 2, Total: 12}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Store().Put(ctx, []string{"users", "alice"}, "prefs", map[string]any{"lang": "fr"}); err != nil {
		t.Fatal(err)
	}
	return path, cps
}

// rawExec changes a closed file behind the engine's back.
func rawExec(t *testing.T, path, q string, args ...any) {
	t.Helper()
	c, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, _, err := c.Prepare(q)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, a := range args {
		switch v := a.(type) {
		case string:
			st.BindText(i+1, v)
		case int:
			st.BindInt(i+1, v)
		case []byte:
			st.BindBlob(i+1, v)
		}
	}
	if err := st.Exec(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestHelpListsEveryCommand(t *testing.T) {
	r := agentstate(t, nil, "help")
	want(t, r, 0)
	for _, c := range commands {
		contains(t, r.stdout, "  "+c.name+" ", c.summary)
		h := agentstate(t, nil, c.name, "-h")
		want(t, h, 0)
		contains(t, h.stdout, "Usage: agentstate "+c.name)
		if h.stderr != "" {
			t.Fatalf("%s -h wrote to stderr: %q", c.name, h.stderr)
		}
		h2 := agentstate(t, nil, "help", c.name)
		want(t, h2, 0)
		if h2.stdout != h.stdout {
			t.Fatalf("help %s differs from %s -h", c.name, c.name)
		}
	}
	want(t, agentstate(t, nil), 2)
	r = agentstate(t, nil, "frobnicate")
	want(t, r, 2)
	contains(t, r.stderr, `unknown command "frobnicate"`)
}

// TestDocsDocumentEveryCommand: the CLI reference's table (docs/cli.md)
// names every command of `agentstate help`.
func TestDocsDocumentEveryCommand(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		if !bytes.Contains(b, []byte("| `agentstate "+c.name+" ")) && !bytes.Contains(b, []byte("| `agentstate "+c.name+"`")) {
			t.Errorf("docs/cli.md has no table row for `agentstate %s`", c.name)
		}
	}
}

func TestUsageErrorsExit2(t *testing.T) {
	path, _ := fixture(t, channels.ModeFull)
	for _, args := range [][]string{
		{"info"},
		{"info", path, "extra"},
		{"state", path},
		{"history", path, "chat", "--limit", "-1"},
		{"convert", path},
		{"convert", path, "--mode", "sideways"},
		{"retain", path, "--keep-latest", "-2"},
		{"verify", path, "--no-such-flag"},
		{"import-langgraph", "a"},
		{"import-langgraph", "--into", "sideways", path, "b"},
		{"import-langgraph", "--delta-reducer", "notes=concat", path, "b"},
		{"export-langgraph", path},
		{"export-langgraph", "--layout", "yaml", path, "b"},
	} {
		r := agentstate(t, nil, args...)
		if r.code != 2 {
			t.Errorf("agentstate %v: exit %d, want 2\n%s", args, r.code, r.stderr)
		}
	}
}

func TestMissingFileIsNamed(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.db")
	for _, cmd := range []string{"info", "verify", "export", "vacuum", "threads"} {
		r := agentstate(t, nil, cmd, missing)
		want(t, r, 1)
		contains(t, r.stderr, missing, "no such file")
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%s created %s", cmd, missing)
		}
	}
	notOurs := filepath.Join(t.TempDir(), "other.db")
	rawExec(t, notOurs, `CREATE TABLE x(y)`)
	r := agentstate(t, nil, "info", notOurs)
	want(t, r, 1)
	contains(t, r.stderr, notOurs, "not an agentstate database")
}

func TestInfo(t *testing.T) {
	path, _ := fixture(t, channels.ModeDelta)
	r := agentstate(t, nil, "info", path)
	want(t, r, 0)
	contains(t, r.stdout, "schema version", "delta (K=3)", "snapshots", "largest threads", "chat", "history cache")
	s := agentstate(t, nil, "stats", path)
	want(t, s, 0)
	if s.stdout != r.stdout {
		t.Fatal("stats and info differ")
	}
	j := agentstate(t, nil, "info", "--json", path)
	want(t, j, 0)
	var st admin.Stats
	if err := json.Unmarshal([]byte(j.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode != channels.ModeDelta || st.SnapshotEvery != 3 || len(st.Surfaces) != 8 || st.LargestThreads[0].ThreadID != "chat" {
		t.Fatalf("info --json: %+v", st)
	}
}

func TestThreads(t *testing.T) {
	path, _ := fixture(t, channels.ModeFull)
	r := agentstate(t, nil, "threads", path)
	want(t, r, 0)
	contains(t, r.stdout, "chat", "other", "alice", "bob", "Trip plan")
	j := agentstate(t, nil, "threads", "--json", "--owner", "bob", path)
	want(t, j, 0)
	lines := jsonLines(t, j.stdout)
	if len(lines) != 1 || lines[0]["thread_id"] != "other" {
		t.Fatalf("--owner bob: %v", lines)
	}
	j = agentstate(t, nil, "threads", path, "--json", "--meta", "topic=travel", "--meta", "pinned=true")
	want(t, j, 0)
	if lines := jsonLines(t, j.stdout); len(lines) != 1 || lines[0]["thread_id"] != "chat" {
		t.Fatalf("--meta: %v", lines)
	}
	j = agentstate(t, nil, "threads", path, "--json", "--status", "busy")
	if lines := jsonLines(t, j.stdout); len(lines) != 1 || lines[0]["thread_id"] != "other" {
		t.Fatalf("--status busy: %v", lines)
	}
	r = agentstate(t, nil, "threads", path, "--meta", "bad key=1")
	want(t, r, 2)
	contains(t, r.stderr, `filter key "bad key"`)
}

func TestState(t *testing.T) {
	path, cps := fixture(t, channels.ModeDelta)
	r := agentstate(t, nil, "state", path, "chat", "--json")
	want(t, r, 0)
	var view struct {
		Values map[string][]codec.Message `json:"values"`
		Config engine.Config              `json:"config"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &view); err != nil {
		t.Fatal(err)
	}
	if ms := view.Values["messages"]; len(ms) != 2 || ms[0].ID != "sum" || ms[1].ID != "last" {
		t.Fatalf("head state: %+v", view)
	}
	r = agentstate(t, nil, "state", path, "chat", "--checkpoint", cps[1].CheckpointID)
	want(t, r, 0)
	if err := json.Unmarshal([]byte(r.stdout), &view); err != nil {
		t.Fatal(err)
	}
	if len(view.Values["messages"]) != 4 || view.Config.CheckpointID != cps[1].CheckpointID {
		t.Fatalf("state at checkpoint 2: %+v", view)
	}
	img := cps[len(cps)-3] // the commit with the hidden image
	r = agentstate(t, nil, "state", path, "chat", "--checkpoint", img.CheckpointID)
	contains(t, r.stdout, "SECRET")
	r = agentstate(t, nil, "state", path, "chat", "--checkpoint", img.CheckpointID, "--safe")
	want(t, r, 0)
	if strings.Contains(r.stdout, "SECRET") || !strings.Contains(r.stdout, `"see"`) {
		t.Fatalf("--safe kept the hidden image or lost the text:\n%s", r.stdout)
	}
	r = agentstate(t, nil, "state", path, "nope")
	want(t, r, 1)
	contains(t, r.stderr, path, "not found", `"nope"`)
}

func TestHistory(t *testing.T) {
	path, cps := fixture(t, channels.ModeDelta)
	r := agentstate(t, nil, "history", path, "chat")
	want(t, r, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != len(cps)+2 { // header, root, commits
		t.Fatalf("%d lines for %d checkpoints:\n%s", len(lines), len(cps)+1, r.stdout)
	}
	contains(t, r.stdout, "(snapshot)", "fork", "messages")
	j := agentstate(t, nil, "history", path, "chat", "--json", "--limit", "3", "--before", cps[5].CheckpointID)
	want(t, j, 0)
	entries := jsonLines(t, j.stdout)
	if len(entries) != 3 || entries[0]["checkpoint_id"] != cps[4].CheckpointID || entries[0]["parent_id"] != cps[3].CheckpointID {
		t.Fatalf("--before --limit: %v", entries)
	}
	r = agentstate(t, nil, "history", path, "nope")
	want(t, r, 1)
	contains(t, r.stderr, path, "no checkpoint")
}

func TestRunsEventsTokens(t *testing.T) {
	path, _ := fixture(t, channels.ModeFull)
	r := agentstate(t, nil, "runs", path, "chat")
	want(t, r, 0)
	contains(t, r.stdout, "run-1", "success", "model-a", "42")
	j := agentstate(t, nil, "runs", path, "chat", "--json")
	if runs := jsonLines(t, j.stdout); len(runs) != 1 || runs[0]["run_id"] != "run-1" {
		t.Fatalf("runs --json: %v", runs)
	}

	r = agentstate(t, nil, "events", path, "chat")
	want(t, r, 0)
	contains(t, r.stdout, "question 0", "tool.call", "answer 0")
	j = agentstate(t, nil, "events", path, "chat", "--messages", "--json")
	want(t, j, 0)
	if evs := jsonLines(t, j.stdout); len(evs) != 2 || evs[1]["content"] != "answer 0" {
		t.Fatalf("--messages: %v", evs)
	}
	j = agentstate(t, nil, "events", path, "chat", "--run", "run-1", "--json")
	if evs := jsonLines(t, j.stdout); len(evs) != 3 {
		t.Fatalf("--run: %v", evs)
	}
	j = agentstate(t, nil, "events", path, "chat", "--run", "other-run", "--json")
	if evs := jsonLines(t, j.stdout); len(evs) != 0 {
		t.Fatalf("--run other-run: %v", evs)
	}

	r = agentstate(t, nil, "tokens", path, "chat")
	want(t, r, 0)
	contains(t, r.stdout, "42 tokens", "model-a", "model-b", "lead agent", "40", "middleware")
	j = agentstate(t, nil, "tokens", path, "chat", "--json")
	var u records.TokenUsage
	if err := json.Unmarshal([]byte(j.stdout), &u); err != nil || u.TotalTokens != 42 || u.ByModel["model-b"].Total != 12 || u.ByCaller.Middleware != 2 {
		t.Fatalf("tokens --json: %v %+v", err, u)
	}
}

func TestVerify(t *testing.T) {
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			path, _ := fixture(t, mode)
			r := agentstate(t, nil, "verify", path)
			want(t, r, 0)
			contains(t, r.stdout, path+": ok:")
			j := agentstate(t, nil, "verify", "--json", path)
			want(t, j, 0)
			var rep admin.VerifyReport
			if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || !rep.OK || rep.Replayed == 0 {
				t.Fatalf("verify --json: %v %+v", err, rep)
			}
		})
	}
}

// problemLines returns the lines of a failed verify that name a problem.
func problemLines(t *testing.T, r result, path string) []string {
	t.Helper()
	want(t, r, 1)
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		if !strings.HasPrefix(l, path+": ") {
			t.Fatalf("line does not name the file: %q", l)
		}
		out = append(out, l)
	}
	contains(t, r.stderr, path, "problems found")
	return out
}

func TestVerifyFindsProblems(t *testing.T) {
	t.Run("deleted parent", func(t *testing.T) {
		path, cps := fixture(t, channels.ModeDelta)
		rawExec(t, path, `DELETE FROM checkpoints WHERE checkpoint_id = ?`, cps[4].CheckpointID)
		lines := problemLines(t, agentstate(t, nil, "verify", path), path)
		// The missing parent, and the writes it had sealed and held.
		wantLine := "parent: thread \"chat\" checkpoint \"" + cps[5].CheckpointID + "\": parent \"" + cps[4].CheckpointID + "\" does not exist"
		if len(lines) != 3 || !strings.Contains(lines[0], wantLine) {
			t.Fatalf("want a line for the missing parent and one per write it left, got:\n%s", strings.Join(lines, "\n"))
		}
		contains(t, strings.Join(lines, "\n"), "orphan write", "which does not exist")
	})
	t.Run("orphan writes", func(t *testing.T) {
		path, _ := fixture(t, channels.ModeFull)
		for i := range 3 {
			rawExec(t, path, `INSERT INTO writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, data) VALUES ('chat', '', 'gone', 't', ?, 'x', 'json', x'7b7d')`, i)
		}
		lines := problemLines(t, agentstate(t, nil, "verify", path), path)
		if len(lines) != 3 {
			t.Fatalf("want one line per orphan write, got:\n%s", strings.Join(lines, "\n"))
		}
		for _, l := range lines {
			contains(t, l, "orphan write", `checkpoint "gone"`)
		}
		j := agentstate(t, nil, "verify", "--json", path)
		want(t, j, 1)
		var rep admin.VerifyReport
		if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || rep.OK || len(rep.Problems) != 3 {
			t.Fatalf("verify --json: %v %+v", err, rep)
		}
		r := agentstate(t, nil, "verify", "--thread", "other", path)
		want(t, r, 0)
	})
	t.Run("corrupt bytes", func(t *testing.T) {
		path, _ := fixture(t, channels.ModeFull)
		// Overwrite the header of the writes table's root page: SQLite's
		// integrity check reports it and the file still opens.
		var root int
		c, err := sqlite3.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _, err := c.Prepare(`SELECT rootpage FROM sqlite_master WHERE name = 'writes'`)
		if err != nil {
			t.Fatal(err)
		}
		if st.Step() {
			root = st.ColumnInt(0)
		}
		st.Close()
		c.Close()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt(bytes.Repeat([]byte{0xEE}, 64), int64(root-1)*4096); err != nil {
			t.Fatal(err)
		}
		f.Close()
		lines := problemLines(t, agentstate(t, nil, "verify", path), path)
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, "integrity:")
		}
		if !found {
			t.Fatalf("no integrity problem:\n%s", strings.Join(lines, "\n"))
		}
	})
	t.Run("lying snapshot", func(t *testing.T) {
		path, _ := fixture(t, channels.ModeDelta)
		lie, _ := codec.Marshal([]codec.Message{{ID: "x", Type: codec.Human, Content: "never said"}})
		c, err := sqlite3.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		st, _, _ := c.Prepare(`UPDATE blobs SET data = ? WHERE rowid = (SELECT max(rowid) FROM blobs)`)
		st.BindBlob(1, lie)
		if err := st.Exec(); err != nil {
			t.Fatal(err)
		}
		st.Close()
		c.Close()
		lines := problemLines(t, agentstate(t, nil, "verify", path), path)
		contains(t, strings.Join(lines, "\n"), "replay:", "differs")
	})
}

func TestRetainAndVacuum(t *testing.T) {
	path, _ := fixture(t, channels.ModeDelta)
	before := agentstate(t, nil, "export", "--quiet", path).stdout
	r := agentstate(t, nil, "retain", path, "--keep-latest", "3", "--drop-branches")
	want(t, r, 0)
	contains(t, r.stdout, "would remove", "dry run")
	if after := agentstate(t, nil, "export", "--quiet", path).stdout; after != before {
		t.Fatal("a dry run changed the file")
	}
	j := agentstate(t, nil, "retain", path, "--keep-latest", "3", "--drop-branches", "--json")
	want(t, j, 0)
	var dry admin.RetainReport
	if err := json.Unmarshal([]byte(j.stdout), &dry); err != nil || !dry.DryRun || dry.CheckpointsRemoved == 0 || dry.DataBytesFreed <= 0 {
		t.Fatalf("retain --json: %v %+v", err, dry)
	}
	j = agentstate(t, nil, "retain", path, "--keep-latest", "3", "--drop-branches", "--apply", "--json")
	want(t, j, 0)
	var done admin.RetainReport
	if err := json.Unmarshal([]byte(j.stdout), &done); err != nil || done.DryRun || done.CheckpointsRemoved != dry.CheckpointsRemoved || done.DataBytesFreed != dry.DataBytesFreed {
		t.Fatalf("retain --apply: %v %+v, dry run said %+v", err, done, dry)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		t.Fatalf("WAL not checkpointed after --apply: %d bytes", fi.Size())
	}
	want(t, agentstate(t, nil, "verify", path), 0)
	r = agentstate(t, nil, "history", path, "chat")
	if n := len(strings.Split(strings.TrimSpace(r.stdout), "\n")) - 1; n != 3 {
		t.Fatalf("%d checkpoints after --keep-latest 3:\n%s", n, r.stdout)
	}
	r = agentstate(t, nil, "vacuum", path)
	want(t, r, 0)
	contains(t, r.stdout, "bytes before")
	want(t, agentstate(t, nil, "verify", path), 0)
	r = agentstate(t, nil, "retain", path, "--thread", "nope")
	want(t, r, 1)
	contains(t, r.stderr, path, `"nope"`)
}

func TestConvert(t *testing.T) {
	path, cps := fixture(t, channels.ModeFull)
	states := func() []string {
		var out []string
		for _, c := range cps {
			out = append(out, agentstate(t, nil, "state", "--json", path, "chat", "--checkpoint", c.CheckpointID).stdout)
		}
		return out
	}
	before := states()
	r := agentstate(t, nil, "convert", path, "--mode", "delta", "--every", "4")
	want(t, r, 0)
	contains(t, r.stdout, "converted 1 thread to delta")
	contains(t, agentstate(t, nil, "info", path).stdout, "delta (K=4)")
	want(t, agentstate(t, nil, "verify", path), 0)
	after := states()
	for i := range before {
		var a, b map[string]any
		json.Unmarshal([]byte(before[i]), &a)
		json.Unmarshal([]byte(after[i]), &b)
		am, _ := json.Marshal(a["values"])
		bm, _ := json.Marshal(b["values"])
		if !bytes.Equal(am, bm) {
			t.Fatalf("checkpoint %d reads differently after convert:\n%s\n%s", i, am, bm)
		}
	}
	r = agentstate(t, nil, "convert", path, "--mode", "full", "--json")
	want(t, r, 0)
	want(t, agentstate(t, nil, "verify", path), 0)
}

func TestExportImportRoundTrip(t *testing.T) {
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			path, _ := fixture(t, mode)
			e1 := agentstate(t, nil, "export", path)
			want(t, e1, 0)
			contains(t, e1.stderr, "rows from "+path)
			dst := filepath.Join(t.TempDir(), "copy.db")
			r := agentstate(t, []byte(e1.stdout), "import", dst)
			want(t, r, 0)
			contains(t, r.stdout, dst, "imported")
			e2 := agentstate(t, nil, "export", dst)
			want(t, e2, 0)
			if e1.stdout != e2.stdout {
				t.Fatal("export -> import -> export is not byte-identical")
			}
			want(t, agentstate(t, nil, "verify", dst), 0)
			// Every surface is in the dump.
			tables := map[string]int{}
			for _, l := range jsonLines(t, e1.stdout) {
				tables[l["table"].(string)]++
			}
			for _, tb := range []string{"agentstate", "checkpoints", "blobs", "writes", "threads", "runs", "events", "store_items", "end"} {
				if tables[tb] == 0 {
					t.Errorf("no %s line in the export", tb)
				}
			}
			// One thread.
			one := agentstate(t, nil, "export", "--thread", "other", path)
			want(t, one, 0)
			if strings.Contains(one.stdout, `"chat"`) {
				t.Fatal("export --thread other holds chat rows")
			}
			// A truncated dump changes nothing and leaves no new file.
			cut := e1.stdout[:len(e1.stdout)/2]
			bad := filepath.Join(t.TempDir(), "bad.db")
			r = agentstate(t, []byte(cut), "import", bad)
			want(t, r, 1)
			contains(t, r.stderr, bad, "malformed export")
			if _, err := os.Stat(bad); err == nil {
				t.Fatal("a failed import into a new file left the file")
			}
			// Importing twice conflicts.
			r = agentstate(t, []byte(e1.stdout), "import", dst)
			want(t, r, 1)
			contains(t, r.stderr, dst, "conflict")
		})
	}
}

func TestImportLangGraph(t *testing.T) {
	src := filepath.Join(t.TempDir(), "lg.sqlite")
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "langgraph", "langgraph-js.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []channels.Mode{channels.ModeFull, channels.ModeDelta} {
		t.Run(string(mode), func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "imported.db")
			r := agentstate(t, nil, "import-langgraph", src, dst, "--mode", string(mode), "--every", "4")
			want(t, r, 0)
			contains(t, r.stdout, "imported 4 threads", "verified, and all 63 checkpoints read as in")
			want(t, agentstate(t, nil, "verify", dst), 0)
			contains(t, agentstate(t, nil, "info", dst).stdout, "mode")
			st := agentstate(t, nil, "state", dst, "fork", "--json")
			want(t, st, 0)
			contains(t, st.stdout, "fresh start")
			h := agentstate(t, nil, "history", dst, "fork")
			want(t, h, 0)
			contains(t, h.stdout, "update", "input", "loop")
			j := agentstate(t, nil, "import-langgraph", src, filepath.Join(t.TempDir(), "j.db"), "--mode", string(mode), "--json")
			want(t, j, 0)
			var rep struct {
				langgraph.Report
				Verified bool `json:"verified"`
				Compared int  `json:"compared"`
			}
			if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil || !rep.Verified || rep.Compared != 63 || rep.Mode != string(mode) {
				t.Fatalf("--json: %v %+v", err, rep)
			}
			// Into the same file again: the threads exist.
			r = agentstate(t, nil, "import-langgraph", src, dst)
			want(t, r, 1)
			contains(t, r.stderr, dst, "already exists")
		})
	}
	path, _ := fixture(t, channels.ModeFull)
	r := agentstate(t, nil, "import-langgraph", path, filepath.Join(t.TempDir(), "x.db"))
	want(t, r, 1)
	contains(t, r.stderr, path, "not a LangGraph SqliteSaver file")
}

func TestImportLangGraphPython(t *testing.T) {
	src := filepath.Join(t.TempDir(), "py.sqlite")
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "langgraph", "python", "langgraph-py.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(src, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// The checkpoint protocol's form (the default) keeps every value as
	// LangGraph's serde wrote it: every thread imports, and state shows the
	// values decoded, messages in the neutral form (docs/cli.md).
	dst0 := filepath.Join(t.TempDir(), "py0.db")
	r := agentstate(t, nil, "import-langgraph", src, dst0)
	want(t, r, 0)
	contains(t, r.stdout, "imported 8 threads (10 namespaces, 101 checkpoints, 193 writes)", "checkpoint protocol's form", "verified, and all 101 checkpoints read as in")
	st := agentstate(t, nil, "state", dst0, "chat", "--json")
	want(t, st, 0)
	contains(t, st.stdout, `"type":"tool"`, `"tool_call_id":"call-5"`, `"status":"error"`, `"artifact"`)
	if strings.Contains(st.stdout, `"$type":"message"`) {
		t.Fatalf("state shows a message in the serde's form: %s", st.stdout)
	}
	st = agentstate(t, nil, "state", dst0, "types", "--json")
	want(t, st, 0)
	contains(t, st.stdout, `"$type":"datetime"`, `"$type":"bytes"`)
	// Into messages, two threads hold a DeltaChannel whose reducer the file
	// does not name: both are listed, nothing is imported, DST is not
	// created.
	dst := filepath.Join(t.TempDir(), "py.db")
	r = agentstate(t, nil, "import-langgraph", "--into", "messages", src, dst)
	want(t, r, 1)
	contains(t, r.stderr, `thread "delta" checkpoint`, `thread "delta-exit" checkpoint`, `channel "notes"`, "--delta-reducer notes=concat",
		"2 of 8 threads", "nothing was imported", "--skip-unsupported imports the other 6 threads")
	if exists(dst) {
		t.Fatal("a failed import left DST behind")
	}
	r = agentstate(t, nil, "import-langgraph", "--into", "messages", "--skip-unsupported", src, dst)
	want(t, r, 0)
	contains(t, r.stdout, "imported 6 threads", `skipped thread "delta"`, `skipped thread "delta-exit"`, "datetime.datetime", "verified, and all 68 checkpoints read as in")
	dst2 := filepath.Join(t.TempDir(), "py2.db")
	r = agentstate(t, nil, "import-langgraph", "--into", "messages", "--delta-reducer", "notes=concat", "--mode", "full", src, dst2)
	want(t, r, 0)
	contains(t, r.stdout, "imported 8 threads", "DeltaChannels rebuilt", "concat 2", "messages 2", "verified, and all 101 checkpoints read as in")
	want(t, agentstate(t, nil, "verify", dst2), 0)
	st = agentstate(t, nil, "state", dst2, "delta", "--json")
	want(t, st, 0)
	contains(t, st.stdout, `"notes"`, `"messages"`)
	want(t, agentstate(t, nil, "import-langgraph", "--delta-reducer", "notes=sum", src, filepath.Join(t.TempDir(), "x.db")), 2)
}

// TestImportLangGraphThreadIDNotUTF8: a thread id that is not UTF-8 makes
// only its thread unsupported: without --skip-unsupported the error names
// it (escaped) and the flag, and nothing is imported; with the flag the
// other threads import and it is listed as skipped. Before, it failed the
// whole import with the flag too.
func TestImportLangGraphThreadIDNotUTF8(t *testing.T) {
	src := copyFile(t, filepath.Join("..", "..", "testdata", "langgraph", "python", "langgraph-py.sqlite"))
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Exec(`UPDATE checkpoints SET thread_id = CAST(x'6368ff61' AS TEXT) WHERE thread_id = 'chat';
		UPDATE writes SET thread_id = CAST(x'6368ff61' AS TEXT) WHERE thread_id = 'chat'`)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, into := range []string{"protocol", "messages"} {
		t.Run(into, func(t *testing.T) {
			args := []string{"import-langgraph", "--into", into}
			if into == "messages" {
				args = append(args, "--delta-reducer", "notes=concat")
			}
			dst := filepath.Join(t.TempDir(), "dst.db")
			r := agentstate(t, nil, append(args, src, dst)...)
			want(t, r, 1)
			contains(t, r.stderr, `thread "ch\xffa": the thread id "ch\xffa" is not valid UTF-8`, "1 of 8 threads", "nothing was imported", "--skip-unsupported imports the other 7 threads")
			if exists(dst) {
				t.Fatal("a refused import left DST behind")
			}
			r = agentstate(t, nil, append(args, "--skip-unsupported", src, dst)...)
			want(t, r, 0)
			contains(t, r.stdout, "imported 7 threads", `skipped thread "ch\xffa": the thread id "ch\xffa" is not valid UTF-8`, "verified, and all")
			for _, out := range []string{r.stdout, r.stderr} {
				if !utf8.ValidString(out) {
					t.Fatalf("the output holds the id's raw bytes:\n%q", out)
				}
			}
			want(t, agentstate(t, nil, "verify", dst), 0)
		})
	}
}

// TestImportLangGraphCompat: files of LangGraph 0.2 and 0.3 (old checkpoint
// formats with pending_sends, update_state forks, ChatMessage,
// FunctionMessage, a string content block, a datetime) import as they are,
// from the committed files, which stay alone in their directory; an
// EncryptedSerializer file needs LANGGRAPH_AES_KEY and says so.
func TestImportLangGraphCompat(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "langgraph", "python")
	listing := func() []string {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		return names
	}
	before := listing()
	for _, name := range []string{"0.2", "0.3", "compat"} {
		dst := filepath.Join(t.TempDir(), "c.db")
		r := agentstate(t, nil, "import-langgraph", filepath.Join(dir, "langgraph-py-"+name+".sqlite"), dst)
		want(t, r, 0)
		contains(t, r.stdout, "imported 1 threads", "verified, and all 11 checkpoints read as in")
		st := agentstate(t, nil, "state", dst, "compat", "--json")
		want(t, st, 0)
		contains(t, st.stdout, `"type":"chat"`, `"role":`, `"type":"function"`, `"plain string block"`, `"$type":"datetime"`)
	}
	if after := listing(); !slices.Equal(before, after) {
		t.Fatalf("the import left files beside its sources: %v, then %v", before, after)
	}
	src := filepath.Join(dir, "langgraph-py-encrypted.sqlite")
	dst := filepath.Join(t.TempDir(), "e.db")
	t.Setenv(langgraph.EncryptionKeyEnv, "")
	r := agentstate(t, nil, "import-langgraph", src, dst)
	want(t, r, 1)
	contains(t, r.stderr, "EncryptedSerializer", "set LANGGRAPH_AES_KEY", "nothing was imported")
	if exists(dst) {
		t.Fatal("a failed import left DST behind")
	}
	t.Setenv(langgraph.EncryptionKeyEnv, "0123456789abcdef0123456789abcdef")
	r = agentstate(t, nil, "import-langgraph", src, dst)
	want(t, r, 0)
	contains(t, r.stdout, "verified, and all 11 checkpoints read as in")
	contains(t, agentstate(t, nil, "state", dst, "compat").stdout, `"type": "function"`)
}

// TestExportLangGraph: the way back. An imported file written as a
// SqliteSaver file imports again as the same checkpoints; an existing DST
// and a file of the thread API are refused, and leave nothing.
func TestExportLangGraph(t *testing.T) {
	for _, c := range []struct{ fixture, layout string }{
		{filepath.Join("..", "..", "testdata", "langgraph", "python", "langgraph-py.sqlite"), "Python"},
		{filepath.Join("..", "..", "testdata", "langgraph", "langgraph-js.sqlite"), "JS"},
	} {
		dir := t.TempDir()
		db, out, again := filepath.Join(dir, "a.db"), filepath.Join(dir, "out.sqlite"), filepath.Join(dir, "b.db")
		want(t, agentstate(t, nil, "import-langgraph", c.fixture, db), 0)
		r := agentstate(t, nil, "export-langgraph", db, out)
		want(t, r, 0)
		contains(t, r.stdout, "as a LangGraph "+c.layout+" SqliteSaver file")
		r = agentstate(t, nil, "import-langgraph", out, again)
		want(t, r, 0)
		contains(t, r.stdout, "verified, and all")
		r = agentstate(t, nil, "export-langgraph", db, out)
		want(t, r, 1)
		contains(t, r.stderr, out, "exists")
	}
	path, _ := fixture(t, channels.ModeFull)
	dir := t.TempDir()
	r := agentstate(t, nil, "export-langgraph", path, filepath.Join(dir, "x.sqlite"))
	want(t, r, 1)
	contains(t, r.stderr, "thread API")
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("a refused export left %d files", len(es))
	}
}

// TestImportLangGraphReadOnlySource: a SqliteSaver file in a directory
// nobody may write (as on read-only media) imports, and nothing appears
// beside it. As root, whom permissions do not stop, the command runs as
// user nobody (runuser), so the directory is read-only for it too.
func TestImportLangGraphReadOnlySource(t *testing.T) {
	base := t.TempDir()
	// nobody must reach it: the test's own directory is made readable, and
	// every directory above it that nobody could not pass through (CI's
	// temporary directory is 0700) is made passable until the test ends.
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(base); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o001 == 0 {
			if err := os.Chmod(d, perm|0o011); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(d, perm) })
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	ro := filepath.Join(base, "ro")
	out := filepath.Join(base, "out")
	bin := filepath.Join(base, "agentstate")
	for _, d := range []string{ro, out} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(out, 0o777)
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "langgraph", "python", "langgraph-py.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(ro, "saver.sqlite")
	if err := os.WriteFile(src, data, 0o444); err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	args := []string{bin, "import-langgraph", src, filepath.Join(out, "dst.db")}
	if os.Geteuid() == 0 {
		args = append([]string{"runuser", "-u", "nobody", "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "HOME="+out, "GOCACHE="+out)
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", args, err, got)
	}
	if !strings.Contains(string(got), "verified, and all 101 checkpoints read as in") {
		t.Fatalf("%s", got)
	}
	if es, _ := os.ReadDir(ro); len(es) != 1 {
		t.Fatalf("the import left %d files in the source's directory", len(es))
	}
	// The same directory, writable: still nothing beside the source.
	if err := os.Chmod(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	want(t, agentstate(t, nil, "import-langgraph", src, filepath.Join(out, "dst2.db")), 0)
	if es, _ := os.ReadDir(ro); len(es) != 1 {
		t.Fatalf("the import left %d files in the source's directory", len(es))
	}
}

func TestProgressOnlyOnTerminals(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	if p := newProgress(pw, false); p.enabled {
		t.Fatal("progress enabled on a pipe")
	}
	var buf bytes.Buffer
	if p := newProgress(&buf, false); p.enabled {
		t.Fatal("progress enabled on a buffer")
	}
	tty, err := os.OpenFile("/dev/null", os.O_WRONLY, 0) // a character device
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	if p := newProgress(tty, true); p.enabled {
		t.Fatal("progress enabled with --json / --quiet")
	}
	if p := newProgress(tty, false); !p.enabled {
		t.Fatal("progress disabled on a character device")
	}
	// A long command on pipes: agentstate() fails on any \r or escape.
	path, _ := fixture(t, channels.ModeDelta)
	start := time.Now()
	for _, args := range [][]string{{"verify", path}, {"export", path}, {"retain", path}, {"verify", "--json", path}} {
		r := agentstate(t, nil, args...)
		want(t, r, 0)
		if args[1] == "--json" && len(jsonLines(t, r.stdout)) != 1 {
			t.Fatalf("verify --json printed more than one JSON object:\n%s", r.stdout)
		}
	}
	_ = start
}

func TestReadOnlyCommandsLeaveTheFileAlone(t *testing.T) {
	path, cps := fixture(t, channels.ModeDelta)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"info", path}, {"threads", path}, {"state", path, "chat"}, {"state", path, "chat", "--checkpoint", cps[2].CheckpointID},
		{"history", path, "chat"}, {"runs", path, "chat"}, {"events", path, "chat"}, {"tokens", path, "chat"},
		{"verify", path}, {"export", path},
	} {
		want(t, agentstate(t, nil, args...), 0)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatal("a read-only command changed the file")
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Fatalf("a read-only command wrote %d bytes of WAL", fi.Size())
	}
}

// TestReadOnlyCommandsOnReadOnlyMedia: every read-only command works on a
// file in a directory that cannot be written (a backup, a mounted image)
// and prints what it prints on the writable original; commands that write
// fail saying why.
func TestReadOnlyCommandsOnReadOnlyMedia(t *testing.T) {
	path, cps := fixture(t, channels.ModeDelta)
	commands := func(p string) [][]string {
		return [][]string{
			{"info", "--json", p}, {"threads", p}, {"state", p, "chat"}, {"state", p, "chat", "--checkpoint", cps[2].CheckpointID},
			{"history", p, "chat"}, {"runs", p, "chat"}, {"events", p, "chat"}, {"tokens", p, "chat"},
			{"verify", p}, {"export", p},
		}
	}
	var outs []string
	for _, args := range commands(path) {
		r := agentstate(t, nil, args...)
		want(t, r, 0)
		outs = append(outs, r.stdout)
	}
	view, kind := testmedia.ReadOnlyView(t, filepath.Dir(path))
	ro := filepath.Join(view, filepath.Base(path))
	for i, args := range commands(ro) {
		r := agentstate(t, nil, args...)
		if r.code != 0 {
			t.Errorf("%v on %s: exit %d: %s", args[:len(args)-1], kind, r.code, r.stderr)
			continue
		}
		if got, exp := strings.ReplaceAll(r.stdout, ro, "FILE"), strings.ReplaceAll(outs[i], path, "FILE"); got != exp && args[0] != "info" {
			t.Errorf("%v on %s prints\n%s\nwant\n%s", args[:1], kind, got, exp)
		}
	}
	for _, args := range [][]string{{"retain", "--apply", ro}, {"vacuum", ro}} {
		r := agentstate(t, nil, args...)
		if r.code != 1 || !strings.Contains(r.stderr, "read-only") {
			t.Errorf("%v on %s: exit %d, stderr %q; want 1 and a message saying the file is read-only", args[:1], kind, r.code, r.stderr)
		}
	}
}

func TestDemoAndBench(t *testing.T) {
	db := filepath.Join(t.TempDir(), "demo.db")
	r := agentstate(t, nil, "demo", "--db", db, "--json")
	want(t, r, 0)
	if !json.Valid([]byte(r.stdout)) {
		t.Fatalf("demo --json:\n%s", r.stdout)
	}
	want(t, agentstate(t, nil, "verify", db), 0)
	r = agentstate(t, nil, "bench", "--turns", "20", "--json")
	want(t, r, 0)
	if lines := jsonLines(t, r.stdout); len(lines) != 2 {
		t.Fatalf("bench --json printed %d objects, want one per mode", len(lines))
	}
}

// TestExportStopsOnInterrupt: SIGINT ends an export part way, with exit 1
// and no trailer, so the truncated dump cannot be imported. The file's
// first item nests 40 maps deep, which the transcoder before never got
// past, deaf to the signal.
func TestExportStopsOnInterrupt(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "big.db")
	db, err := engine.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var deep any = "leaf"
	for range 40 {
		deep = map[string]any{"k": deep}
	}
	ops := []records.StoreOp{records.PutOp{Namespace: []string{"a"}, Key: "deep", Value: deep.(map[string]any)}}
	for i := range 5000 {
		ops = append(ops, records.PutOp{Namespace: []string{"b"}, Key: fmt.Sprint(i), Value: map[string]any{"text": strings.Repeat("w", 2000)}})
	}
	if _, err := db.Store().Batch(ctx, ops...); err != nil {
		t.Fatal(err)
	}
	db.Close()

	cmd := exec.Command(binary, "export", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hung := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer hung.Stop()
	// The export blocks on the pipe once it has filled it; the first line
	// says it has started.
	r := bufio.NewReader(out)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	err = cmd.Wait()
	if !hung.Stop() {
		t.Fatal("the export did not end within a minute of SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("interrupted export: %v\n%s", err, errb.String())
	}
	if bytes.Contains(rest, []byte(`{"table":"end"`)) || bytes.Count(rest, []byte("\n")) > 2500 {
		t.Fatalf("the export ran to its end (%d lines) after SIGINT", bytes.Count(rest, []byte("\n")))
	}
	contains(t, errb.String(), "context canceled")
}

// A SqliteSaver file holding a 300 MB checkpoint is refused with a message
// naming the limit (it made ncruces panic, exit 2 with a Go stack), and a
// new destination is not created.
func TestImportLangGraphHugeRow(t *testing.T) {
	src := filepath.Join(t.TempDir(), "huge.sqlite")
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	// The blob is the last column, so SQLite writes its zeros page by page.
	err = c.Exec(`CREATE TABLE checkpoints (thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, metadata, checkpoint);
		CREATE TABLE writes (thread_id, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value);
		INSERT INTO checkpoints VALUES ('t', '', 'c1', NULL, 'json', '{}', zeroblob(300 << 20))`)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst.db")
	r := agentstate(t, nil, "import-langgraph", src, dst)
	want(t, r, 1)
	contains(t, r.stderr, "too large", `checkpoint "c1"`, "MaxCallBytes")
	if strings.Contains(r.stderr, "goroutine") {
		t.Fatalf("a Go stack:\n%s", r.stderr)
	}
	if es, err := os.ReadDir(filepath.Dir(dst)); err != nil || len(es) > 0 {
		t.Fatalf("the refused import left %v in DST's directory (%v)", es, err)
	}
}

// agentstateInterrupted runs the binary and sends it SIGINT (Ctrl-C) after
// interruptAfter if it is still running; the test fails if it has not
// ended 20 s after that.
func agentstateInterrupted(t *testing.T, interruptAfter time.Duration, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(interruptAfter):
		cmd.Process.Signal(os.Interrupt)
		select {
		case err = <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("agentstate %v had not ended 20 s after SIGINT (sent %v after it started)", args, interruptAfter)
		}
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("agentstate %v: %v", args, err)
	}
	return r
}

// TestLangGraphEndlessViews: a SqliteSaver file whose checkpoints or writes
// table is a view whose rows never end, and a file that is no saver's with
// such a view: import-langgraph refuses the source at once, naming the
// view, and info and verify say it is not an agentstate file; none reads
// the view. Before, all three read it for ever and ignored Ctrl-C.
func TestLangGraphEndlessViews(t *testing.T) {
	const forever = `WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r)`
	for _, c := range []struct{ name, sql, says string }{
		{"checkpoints", `DROP TABLE checkpoints; CREATE VIEW checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, type, checkpoint, metadata) AS ` +
			forever + ` SELECT 'chat', '', x, NULL, 'msgpack', NULL, NULL FROM r`, `"checkpoints" is a view, not a table`},
		{"writes", `DROP TABLE writes; CREATE VIEW writes(thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value) AS ` +
			forever + ` SELECT 'chat', '', x, 't', '', 0, 'c', 'json', NULL FROM r`, `"writes" is a view, not a table`},
		{"no saver's", `DROP TABLE checkpoints; DROP TABLE writes; CREATE VIEW checkpoints(thread_id) AS ` + forever + ` SELECT x FROM r`,
			"not a LangGraph SqliteSaver file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := copyFile(t, filepath.Join("..", "..", "testdata", "langgraph", "python", "langgraph-py.sqlite"))
			db, err := sqlite3.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Exec(c.sql)
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "dst.db")
			r := agentstateInterrupted(t, 5*time.Second, "import-langgraph", "--skip-unsupported", src, dst)
			want(t, r, 1)
			contains(t, r.stderr, src, c.says)
			if exists(dst) {
				t.Fatal("a refused import left DST behind")
			}
			for _, cmd := range []string{"info", "verify"} {
				r := agentstateInterrupted(t, 5*time.Second, cmd, src)
				want(t, r, 1)
				contains(t, r.stderr, src, "not an agentstate database")
			}
		})
	}
}

// Only a file of an older schema is sent to `agentstate upgrade`: a file
// with no agentstate schema yet, and a current file on read-only media whose
// log cannot be read without creating its -shm, are said as what they are.
func TestReadOnlyRefusalsThatAreNotOld(t *testing.T) {
	dir := t.TempDir()
	// An SQLite file that holds no schema (one table made and dropped).
	bare := filepath.Join(dir, "bare.db")
	c, err := sqlite3.Open(bare)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(`CREATE TABLE x (a); DROP TABLE x`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// A current file copied while open: its last commits in the -wal,
	// without the -shm.
	o := engine.DefaultOptions()
	live, err := engine.Open(context.Background(), filepath.Join(dir, "live.db"), &o)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.Commit(context.Background(), "t", engine.Step{Tasks: []engine.TaskWrites{{TaskID: "t", Writes: []engine.ChannelWrite{
		{Channel: engine.MessagesChannel, Value: codec.Message{ID: "m1", Type: codec.Human, Content: "hi"}}}}}}); err != nil {
		t.Fatal(err)
	}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, "live.db"+suffix))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "noshm.db"+suffix), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	live.Close()
	view, kind := testmedia.ReadOnlyView(t, dir)
	for _, c := range []struct{ file, says string }{
		{bare, "holds no agentstate schema"},
		{filepath.Join(view, "noshm.db"), "-shm"},
	} {
		for _, cmd := range []string{"info", "verify"} {
			r := agentstate(t, nil, cmd, c.file)
			want(t, r, 1)
			contains(t, r.stderr, c.says)
			if strings.Contains(r.stderr, "upgrade") || strings.Contains(r.stderr, "older") {
				t.Errorf("%s %s (on %s) is sent to upgrade:\n%s", cmd, c.file, kind, r.stderr)
			}
		}
	}
}

// A checkpoint whose parent the source lacks is refused, naming both (it
// became a root silently, and the CLI said every checkpoint read as in the
// source); --orphans-as-roots imports it as a root and says so.
func TestImportLangGraphMissingParent(t *testing.T) {
	src := copyFile(t, filepath.Join("..", "..", "testdata", "langgraph", "langgraph-js.sqlite"))
	c, err := sqlite3.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Exec(`UPDATE checkpoints SET parent_checkpoint_id = 'zz-missing' WHERE thread_id = 'fork' AND checkpoint_id =
		(SELECT checkpoint_id FROM checkpoints WHERE thread_id = 'fork' ORDER BY checkpoint_id LIMIT 1 OFFSET 1)`)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst.db")
	r := agentstate(t, nil, "import-langgraph", src, dst)
	want(t, r, 1)
	contains(t, r.stderr, `thread "fork" checkpoint`, `its parent "zz-missing" is not in the source`, "--orphans-as-roots", "nothing was imported")
	if exists(dst) {
		t.Fatal("a refused import left DST behind")
	}
	r = agentstate(t, nil, "import-langgraph", "--orphans-as-roots", src, dst)
	want(t, r, 0)
	contains(t, r.stdout, `imported as a root: its parent "zz-missing" is not in`, "(but for the 1 parents listed above, which it does not hold)")
}
