//go:build js && wasm

// Command proto measures, before the engine is ported, what SQLite provided
// by the JavaScript host would cost against SQLite translated into the Go
// module (ncruces). Both builds replay the exact statements the engine runs
// for Open (fresh in-memory file) + Put + GetTuple (sqllog.json, recorded
// from the engine), and time a statement loop; both link codec and channels
// so that the Go side weighs what the real module's Go side weighs.
//
//	GOOS=js GOARCH=wasm go build -o host.wasm ./wasm/startup/proto              # SQLite from the host
//	GOOS=js GOARCH=wasm go build -tags ncruces -o ncruces.wasm ./wasm/startup/proto
//
// run.mjs loads either and prints the timings.
package main

import (
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"syscall/js"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
)

// driver is the least a storage seam needs from SQLite: prepared statements
// run with bound arguments, all rows returned at once.
type driver interface {
	open(name string) error
	prepare(sql string) (int, error)
	run(stmt int, args []any) ([][]any, error)
	// function registers a deterministic scalar function of Go.
	function(name string, nArg int, fn func(args []any) (any, error)) error
	close() error
}

//go:embed sqllog.json
var sqlLog []byte

type logged struct {
	Phase string `json:"phase"`
	Conn  string `json:"conn"`
	SQL   string `json:"sql"`
	Args  []any  `json:"args"`
}

func main() {
	js.Global().Get("__proto_ready").Invoke(js.FuncOf(func(_ js.Value, args []js.Value) any {
		what := args[0].String()
		res := js.Global().Get("Object").New()
		var t map[string]float64
		var err error
		switch what {
		case "first":
			t, err = first()
		case "loop":
			t, err = loop(args[1].Int())
		}
		if err != nil {
			res.Set("error", err.Error())
		}
		for k, v := range t {
			res.Set(k, v)
		}
		return res
	}))
	select {}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// first replays the engine's statements of Open, Put and GetTuple on one
// fresh in-memory database per connection name, with each distinct SQL
// text prepared once per connection, as the engine's statement cache does.
func first() (map[string]float64, error) {
	t0 := time.Now()
	var log []logged
	if err := json.Unmarshal(sqlLog, &log); err != nil {
		return nil, err
	}
	// One connection in memory: the log's reader (c1) reads what c0 wrote,
	// so both map to one handle here.
	d := newDriver()
	if err := d.open(":memory:"); err != nil {
		return nil, err
	}
	stmts := map[string]int{}
	times := map[string]float64{}
	var rows int
	last := time.Now()
	phase := "open"
	for _, l := range log {
		if l.SQL == "PRAGMA query_only=ON" {
			continue // the reader's setting; here it shares the writer's handle
		}
		if l.Phase != phase {
			times[phase] = ms(time.Since(last))
			last, phase = time.Now(), l.Phase
		}
		id, ok := stmts[l.SQL]
		if !ok {
			var err error
			if id, err = d.prepare(l.SQL); err != nil {
				return nil, fmt.Errorf("prepare %q: %w", l.SQL, err)
			}
			stmts[l.SQL] = id
		}
		args := make([]any, len(l.Args))
		for i, a := range l.Args {
			switch v := a.(type) {
			case map[string]any: // {"blob": base64}
				b, _ := base64.StdEncoding.DecodeString(v["blob"].(string))
				args[i] = b
			case float64:
				if v == float64(int64(v)) {
					args[i] = int64(v)
				} else {
					args[i] = v
				}
			default:
				args[i] = v
			}
		}
		// The engine's own work on values: encode what it stores, decode
		// what it reads (so codec and channels are really linked in).
		if l.Phase == "put" {
			b, err := codec.Marshal(map[string]any{"v": 4, "id": "x"})
			if err != nil {
				return nil, err
			}
			_ = b
		}
		res, err := d.run(id, args)
		if err != nil {
			return nil, fmt.Errorf("run %q: %w", l.SQL, err)
		}
		rows += len(res)
	}
	times[phase] = ms(time.Since(last))
	msgs, err := channels.ApplyMessages(nil, []channels.MessageUpdate{{Messages: []codec.Message{{ID: channels.NewID(), Type: codec.Human, Content: "hi"}}}})
	if err != nil {
		return nil, err
	}
	times["rows"] = float64(rows)
	times["msgs"] = float64(len(msgs))
	times["go_total"] = ms(time.Since(t0))
	return times, nil
}

// loop times n runs of one-row statements: SELECT ?1 (the crossing alone),
// and the five statements of a GetTuple read transaction.
func loop(n int) (map[string]float64, error) {
	d := newDriver()
	if err := d.open(":memory:"); err != nil {
		return nil, err
	}
	defer d.close()
	sel, err := d.prepare("SELECT ?1")
	if err != nil {
		return nil, err
	}
	payload := make([]byte, 1000)
	start := time.Now()
	for i := range n {
		r, err := d.run(sel, []any{int64(i)})
		if err != nil || len(r) != 1 || r[0][0].(int64) != int64(i) {
			return nil, fmt.Errorf("select ?1: %v %v", r, err)
		}
	}
	perSelect := ms(time.Since(start)) * 1000 / float64(n)
	start = time.Now()
	for i := range n {
		r, err := d.run(sel, []any{payload})
		if err != nil || len(r[0][0].([]byte)) != 1000 {
			return nil, fmt.Errorf("select blob: %v", err)
		}
		_ = i
	}
	perBlob := ms(time.Since(start)) * 1000 / float64(n)

	if _, err := d.run(mustPrepare(d, "CREATE TABLE kv(k TEXT PRIMARY KEY, v BLOB)"), nil); err != nil {
		return nil, err
	}
	ins := mustPrepare(d, "INSERT INTO kv(k, v) VALUES (?, ?)")
	for i := range 100 {
		if _, err := d.run(ins, []any{fmt.Sprint("k", i), payload}); err != nil {
			return nil, err
		}
	}
	begin, get, commit := mustPrepare(d, "BEGIN"), mustPrepare(d, "SELECT k, v FROM kv WHERE k = ?"), mustPrepare(d, "COMMIT")
	start = time.Now()
	for i := range n {
		if _, err := d.run(begin, nil); err != nil {
			return nil, err
		}
		for j := range 3 {
			r, err := d.run(get, []any{fmt.Sprint("k", (i+j)%100)})
			if err != nil || len(r) != 1 {
				return nil, fmt.Errorf("get: %v", err)
			}
		}
		if _, err := d.run(commit, nil); err != nil {
			return nil, err
		}
	}
	perTx := ms(time.Since(start)) * 1000 / float64(n)

	// A Go scalar function called once per row (the engine's store filters
	// are such functions), against SQLite's own length() on the same rows.
	err = d.function("go_len", 1, func(args []any) (any, error) {
		switch v := args[0].(type) {
		case string:
			return int64(len(v)), nil
		case []byte:
			return int64(len(v)), nil
		}
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	const rows = 10000
	cte := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 10000) "
	withGo, plain := mustPrepare(d, cte+"SELECT sum(go_len(printf('%08d', x))) FROM c"), mustPrepare(d, cte+"SELECT sum(length(printf('%08d', x))) FROM c")
	timeQuery := func(st int) (time.Duration, error) {
		start := time.Now()
		r, err := d.run(st, nil)
		if err != nil {
			return 0, err
		}
		if len(r) != 1 || r[0][0] != int64(8*rows) {
			return 0, fmt.Errorf("sum of lengths: %v", r)
		}
		return time.Since(start), nil
	}
	var goFn, sqlFn time.Duration
	for range 3 {
		g, err := timeQuery(withGo)
		if err != nil {
			return nil, err
		}
		p, err := timeQuery(plain)
		if err != nil {
			return nil, err
		}
		goFn, sqlFn = g, p
	}
	perCall := float64((goFn - sqlFn).Nanoseconds()) / 1000 / rows
	return map[string]float64{"select_us": perSelect, "select_blob1k_us": perBlob, "read_tx_5stmts_us": perTx, "go_func_call_us": perCall}, nil
}

func mustPrepare(d driver, q string) int {
	id, err := d.prepare(q)
	if err != nil {
		panic(err)
	}
	return id
}
