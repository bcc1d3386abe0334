package langgraph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/ncruces/go-sqlite3"
)

// The import-speed benchmark reads a LangGraph Python SqliteSaver file of
// 10,000 checkpoints written here, without Python, in the shape
// `generate.sh --bench 10000` gives (generate.py's write_bench): 250 threads
// of the chat graph, each 5 turns of a plain question (3 checkpoints) and a
// question that runs the tool loop with two parallel tool calls (5
// checkpoints), the default messages channel (the whole list in every
// checkpoint), "turns" and "topic" beside it, pending writes as the loop
// stores them. AGENTSTATE_BENCH_SRC=path benchmarks another file instead (a
// real one, to check that this one is representative);
// AGENTSTATE_BENCH_WRITE=path writes the file there and keeps it.
//
//	go test ./langgraph -run '^$' -bench ImportPython -benchtime 3x

// benchSource is the file to import: AGENTSTATE_BENCH_SRC, or one written
// in the benchmark's temporary directory.
func benchSource(b *testing.B) string {
	if p := os.Getenv("AGENTSTATE_BENCH_SRC"); p != "" {
		return p
	}
	path := filepath.Join(b.TempDir(), "bench.sqlite")
	if keep := os.Getenv("AGENTSTATE_BENCH_WRITE"); keep != "" {
		path = keep // kept, to time the command on it
	}
	if err := writePythonBench(path, 10000); err != nil {
		b.Fatal(err)
	}
	return path
}

func BenchmarkImportPython(b *testing.B) {
	src := benchSource(b)
	b.Run("protocol", func(b *testing.B) {
		benchImport(b, src, "", Options{})
	})
	for _, mode := range []channels.Mode{channels.ModeDelta, channels.ModeFull} {
		b.Run("messages-"+string(mode), func(b *testing.B) {
			benchImport(b, src, mode, Options{Into: IntoMessages})
		})
	}
}

// benchImport imports src with o into a fresh database of mode (""
// leaves the default) b.N times, timing only the imports, and reports
// checkpoints per second of wall time and of CPU time.
func benchImport(b *testing.B, src string, mode channels.Mode, o Options) {
	ctx := context.Background()
	n := 0
	var cpu int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dbo := engine.DefaultOptions()
		if mode != "" {
			dbo.Mode = mode
		}
		db, err := engine.Open(ctx, filepath.Join(b.TempDir(), fmt.Sprintf("dst%d.db", i)), &dbo)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		c0 := processCPU()
		rep, err := Import(ctx, db, src, o)
		cpu += processCPU() - c0
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		n += rep.Checkpoints
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "checkpoints/s")
	if cpu > 0 {
		// The process's CPU time (all threads): what the load of the
		// shared machine leaves aside.
		b.ReportMetric(float64(n)/(float64(cpu)/1e9), "checkpoints/cpu-s")
	}
}

// TestPythonBenchFile checks the generated file against the import and
// LangGraph's shape: the right counts, and every checkpoint reads back as
// the source holds it.
func TestLangGraphPythonBenchFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.sqlite")
	if err := writePythonBench(path, 80); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := openDst(t, channels.ModeDelta, 10)
	rep, err := Import(ctx, db, path, Options{Into: IntoMessages})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Threads != 2 || rep.Checkpoints != 80 || rep.Writes != 140 || rep.Dropped["ToolMessage.artifact"] != 10 {
		t.Fatalf("report %+v", rep)
	}
	if vr, err := db.Verify(ctx, admin.VerifyOptions{}); err != nil || !vr.OK {
		t.Fatalf("verify: %v %v", err, vr.Problems)
	}
	if n, diffs, err := Compare(ctx, db, path, Options{Into: IntoMessages}); err != nil || n != 80 || len(diffs) > 0 {
		t.Fatalf("compare: %d %v %v", n, err, diffs)
	}
}

// writePythonLongThread writes one thread of turns turns (turns/2 pairs of
// a plain question and a tool loop) as LangGraph Python's SqliteSaver
// stores it: the whole message list in every checkpoint.
func writePythonLongThread(path string, turns int) error {
	return writeBenchFile(path, func(g *benchGraph) error { return g.threadTurns("long", 0, turns/2) })
}

// BenchmarkImportLongThread imports a 400-turn thread (1,600 checkpoints)
// and reports the source's and the destination's bytes (after a VACUUM of
// both: the pages the data takes) and their ratio.
//
//	go test ./langgraph -run '^$' -bench ImportLongThread -benchtime 1x
func BenchmarkImportLongThread(b *testing.B) {
	ctx := context.Background()
	src := filepath.Join(b.TempDir(), "long.sqlite")
	if err := writePythonLongThread(src, 400); err != nil {
		b.Fatal(err)
	}
	srcBytes := fileBytes(b, src)
	for i := 0; i < b.N; i++ {
		dst := filepath.Join(b.TempDir(), "long.db")
		o := engine.DefaultOptions()
		db, err := engine.Open(ctx, dst, &o)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Import(ctx, db, src, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := db.Vacuum(ctx); err != nil {
			b.Fatal(err)
		}
		db.Close()
		dstBytes := fileBytes(b, dst)
		if keep := os.Getenv("AGENTSTATE_BENCH_KEEP"); keep != "" {
			data, _ := os.ReadFile(dst)
			os.WriteFile(keep, data, 0o644)
		}
		b.ReportMetric(float64(rep.Checkpoints), "checkpoints")
		b.ReportMetric(float64(srcBytes)/1e6, "source-MB")
		b.ReportMetric(float64(dstBytes)/1e6, "imported-MB")
		b.ReportMetric(float64(srcBytes)/float64(dstBytes), "x-smaller")
	}
}

// fileBytes is a SQLite file's size after a VACUUM of a copy of it.
func fileBytes(b *testing.B, path string) int64 {
	c, err := sqlite3.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Exec(`PRAGMA wal_checkpoint(TRUNCATE); VACUUM`); err != nil {
		b.Fatal(err)
	}
	c.Close()
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// writePythonBench writes n checkpoints (a multiple of 40) of the chat
// graph as LangGraph Python's SqliteSaver stores them.
func writePythonBench(path string, n int) error {
	if n%40 != 0 {
		return fmt.Errorf("n must be a multiple of 40")
	}
	return writeBenchFile(path, func(g *benchGraph) error {
		for i := range n / 40 {
			if err := g.thread(fmt.Sprintf("bench-%05d", i), i); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeBenchFile writes a SqliteSaver file whose threads fill writes.
func writeBenchFile(path string, fill func(g *benchGraph) error) error {
	c, err := sqlite3.Open(path)
	if err != nil {
		return err
	}
	defer c.Close()
	err = c.Exec(`CREATE TABLE checkpoints (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL,
		parent_checkpoint_id TEXT, type TEXT, checkpoint BLOB, metadata BLOB, PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id));
	CREATE TABLE writes (thread_id TEXT NOT NULL, checkpoint_ns TEXT NOT NULL DEFAULT '', checkpoint_id TEXT NOT NULL, task_id TEXT NOT NULL,
		task_path TEXT NOT NULL DEFAULT '', idx INTEGER NOT NULL, channel TEXT NOT NULL, type TEXT, value BLOB,
		PRIMARY KEY (thread_id, checkpoint_ns, checkpoint_id, task_id, idx));
	BEGIN`)
	if err != nil {
		return err
	}
	insCp, _, err := c.Prepare(`INSERT INTO checkpoints VALUES (?, '', ?, ?, 'msgpack', ?, ?)`)
	if err != nil {
		return err
	}
	defer insCp.Close()
	insW, _, err := c.Prepare(`INSERT INTO writes VALUES (?, '', ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer insW.Close()
	g := &benchGraph{rng: rand.New(rand.NewPCG(1, 2)), insCp: insCp, insW: insW}
	if err := fill(g); err != nil {
		return err
	}
	return c.Exec(`COMMIT`)
}

type benchGraph struct {
	rng         *rand.Rand
	insCp, insW *sqlite3.Stmt
	seq         int // checkpoint ids sort in creation order
	calls       int // the scripted model's call counter
	// one thread's state
	threadID string
	parent   any
	step     int
	counter  int
	values   map[string]any
	versions map[string]string
	seen     map[string]any
}

type benchWrite struct {
	channel string
	value   any // nil: serde "null"
}

func (g *benchGraph) uuid() string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", g.rng.Uint32(), g.rng.Uint32()&0xffff, g.rng.Uint32()&0xffff, g.rng.Uint32()&0xffff, g.rng.Uint64()&0xffffffffffff)
}

func (g *benchGraph) version() string {
	g.counter++
	return fmt.Sprintf("%032d.%v", g.counter, g.rng.Float64())
}

// message is LangChain's message as LangGraph Python's serde writes it.
func benchMessage(module, class string, fields map[string]any) *pyRaw {
	base := map[string]any{"additional_kwargs": map[string]any{}, "response_metadata": map[string]any{}, "name": nil}
	for k, v := range fields {
		base[k] = v
	}
	data, _ := encodePy(nil, []any{"langchain_core.messages." + module, class, base, "model_validate_json"})
	return &pyRaw{data: extBytes(5, data), why: "langchain_core.messages." + module + "." + class}
}

func (g *benchGraph) ai(content any, toolCalls []any, kwargs map[string]any, meta map[string]any, input int64) *pyRaw {
	g.calls++
	f := map[string]any{"content": content, "type": "ai", "id": fmt.Sprintf("ai-%d", g.calls), "tool_calls": toolCalls,
		"invalid_tool_calls": []any{}, "usage_metadata": map[string]any{"input_tokens": input, "output_tokens": int64(7), "total_tokens": input + 7,
			"input_token_details": map[string]any{"cache_read": int64(2)}}}
	if kwargs != nil {
		f["additional_kwargs"] = kwargs
	}
	if meta != nil {
		f["response_metadata"] = meta
	}
	return benchMessage("ai", "AIMessage", f)
}

func (g *benchGraph) thread(id string, i int) error { return g.threadTurns(id, i, 5) }

// threadTurns writes a thread of pairs pairs of turns (a plain question, then
// one that runs the tool loop): 8 checkpoints a pair.
func (g *benchGraph) threadTurns(id string, i, pairs int) error {
	g.threadID, g.parent, g.step, g.counter = id, nil, -1, 0
	g.values, g.versions, g.seen = map[string]any{}, map[string]string{}, map[string]any{"__input__": map[string]any{}}
	for turn := range pairs {
		q := benchMessage("human", "HumanMessage", map[string]any{"content": fmt.Sprintf("question %d of thread %d", turn, i), "type": "human", "id": fmt.Sprintf("b%d-%d-q", i, turn)})
		if err := g.invoke(q, fmt.Sprintf("question %d of thread %d", turn, i), false); err != nil {
			return err
		}
		w := benchMessage("human", "HumanMessage", map[string]any{"content": "and the weather?", "type": "human", "id": fmt.Sprintf("b%d-%d-w", i, turn)})
		if err := g.invoke(w, "", true); err != nil {
			return err
		}
	}
	return nil
}

// invoke runs one input through the graph: the input checkpoint, the
// __start__ step, and the agent (with the tool loop if tools is set).
func (g *benchGraph) invoke(human *pyRaw, text string, tools bool) error {
	msgs := func() []any { l, _ := g.values["messages"].([]any); return l }
	g.values["__start__"] = map[string]any{"messages": []any{human}}
	start := g.uuid()
	if err := g.checkpoint("input", []string{"__start__"}, start, "~__pregel_pull, __start__",
		[]benchWrite{{"messages", []any{human}}, {"branch:to:agent", nil}}); err != nil {
		return err
	}
	delete(g.values, "__start__")
	g.values["messages"] = append(msgs(), human)
	g.values["branch:to:agent"] = nil
	agent := g.uuid()
	n := int64(len(msgs())*10 + 10)
	if !tools {
		ai := g.ai([]any{map[string]any{"type": "text", "text": "You said: " + text}}, []any{},
			map[string]any{"seq": int64(g.calls + 1)}, map[string]any{"model_name": "fake-1", "finish_reason": "stop"}, n)
		if err := g.checkpoint("loop", []string{"branch:to:agent", "messages"}, agent, "~__pregel_pull, agent",
			[]benchWrite{{"turns", int64(1)}, {"messages", []any{ai}}}); err != nil {
			return err
		}
		delete(g.values, "branch:to:agent")
		g.values["messages"] = append(msgs(), ai)
		g.values["turns"] = g.turns() + 1
		return g.checkpoint("loop", []string{"messages", "turns"}, "", "", nil)
	}
	call := fmt.Sprintf("call-%d", g.calls+1)
	ai := g.ai("", []any{
		map[string]any{"name": "get_weather", "args": map[string]any{"city": "Paris", "unit": "C"}, "id": call + "-a", "type": "tool_call"},
		map[string]any{"name": "lookup", "args": map[string]any{"query": "Paris"}, "id": call + "-b", "type": "tool_call"},
	}, nil, map[string]any{"model_name": "fake-1", "finish_reason": "tool_calls"}, n)
	if err := g.checkpoint("loop", []string{"branch:to:agent", "messages"}, agent, "~__pregel_pull, agent",
		[]benchWrite{{"turns", int64(1)}, {"messages", []any{ai}}, {"branch:to:tools", nil}}); err != nil {
		return err
	}
	delete(g.values, "branch:to:agent")
	g.values["messages"] = append(msgs(), ai)
	g.values["turns"] = g.turns() + 1
	g.values["branch:to:tools"] = nil
	t1 := benchMessage("tool", "ToolMessage", map[string]any{"content": "21 degrees C in Paris", "type": "tool", "name": "get_weather",
		"id": g.uuid(), "tool_call_id": call + "-a", "artifact": nil, "status": "success"})
	t2 := benchMessage("tool", "ToolMessage", map[string]any{"content": "2 results for Paris", "type": "tool", "name": "lookup",
		"id": g.uuid(), "tool_call_id": call + "-b", "status": "success",
		"artifact": map[string]any{"query": "Paris", "hits": []any{map[string]any{"rank": int64(1), "url": "https://example.org/paris"}}}})
	if err := g.checkpoint("loop", []string{"branch:to:tools", "messages", "turns"}, g.uuid(), "~__pregel_pull, tools",
		[]benchWrite{{"messages", []any{t1, t2}}, {"branch:to:agent", nil}}); err != nil {
		return err
	}
	delete(g.values, "branch:to:tools")
	g.values["messages"] = append(msgs(), t1, t2)
	g.values["branch:to:agent"] = nil
	final := g.ai("Tools said: 21 degrees C in Paris / 2 results for Paris", []any{}, nil, nil, n+30)
	if err := g.checkpoint("loop", []string{"branch:to:agent", "messages"}, g.uuid(), "~__pregel_pull, agent",
		[]benchWrite{{"turns", int64(1)}, {"messages", []any{final}}, {"topic", "weather"}}); err != nil {
		return err
	}
	delete(g.values, "branch:to:agent")
	g.values["messages"] = append(msgs(), final)
	g.values["turns"] = g.turns() + 1
	g.values["topic"] = "weather"
	return g.checkpoint("loop", []string{"messages", "topic", "turns"}, "", "", nil)
}

func (g *benchGraph) turns() int64 { n, _ := g.values["turns"].(int64); return n }

// checkpoint stores the state as a checkpoint (the updated channels get a
// new version) and the writes of the task that runs from it.
func (g *benchGraph) checkpoint(source string, updated []string, task, path string, writes []benchWrite) error {
	g.seq++
	id := fmt.Sprintf("1f1ed1ba-%04x-6%03x-%04x-%012x", g.seq>>12, g.seq&0xfff, 0x8000+g.step+1, g.rng.Uint64()&0xffffffffffff)
	v := g.version()
	for _, ch := range updated {
		g.versions[ch] = v
	}
	if source == "input" {
		g.versions["__start__"] = v
	}
	values := map[string]any{}
	for ch, x := range g.values {
		values[ch] = x
	}
	versions := map[string]any{}
	for ch, x := range g.versions {
		versions[ch] = x
	}
	var uc []any
	for _, ch := range updated {
		uc = append(uc, ch)
	}
	doc, err := encodePy(nil, map[string]any{"v": int64(4), "id": id, "ts": "2026-12-01T00:10:35.460296+00:00",
		"channel_values": values, "channel_versions": versions, "versions_seen": g.seen, "updated_channels": uc})
	if err != nil {
		return err
	}
	md := fmt.Sprintf(`{"source": %q, "step": %d, "parents": {}}`, source, g.step)
	g.insCp.BindText(1, g.threadID)
	g.insCp.BindText(2, id)
	if g.parent == nil {
		g.insCp.BindNull(3)
	} else {
		g.insCp.BindText(3, g.parent.(string))
	}
	g.insCp.BindBlob(4, doc)
	g.insCp.BindBlob(5, []byte(md))
	if err := g.insCp.Exec(); err != nil {
		return err
	}
	if task != "" {
		// The node that runs next records the versions it saw.
		node := path[len("~__pregel_pull, "):]
		trigger := "branch:to:" + node
		if node == "__start__" {
			trigger = "__start__"
		}
		seen := map[string]any{}
		for k, x := range g.seen {
			seen[k] = x
		}
		seen[node] = map[string]any{trigger: g.versions[trigger]}
		g.seen = seen
	}
	for idx, w := range writes {
		typ, data := "null", []byte{}
		if w.value != nil {
			typ = "msgpack"
			if data, err = encodePy(nil, w.value); err != nil {
				return err
			}
		}
		g.insW.BindText(1, g.threadID)
		g.insW.BindText(2, id)
		g.insW.BindText(3, task)
		g.insW.BindText(4, path)
		g.insW.BindInt(5, idx)
		g.insW.BindText(6, w.channel)
		g.insW.BindText(7, typ)
		g.insW.BindBlob(8, data)
		if err := g.insW.Exec(); err != nil {
			return err
		}
	}
	g.parent = id
	g.step++
	return nil
}
