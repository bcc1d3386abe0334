package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/records"
	"github.com/agentstate/agentstate/internal/pgurl"
	"github.com/agentstate/agentstate/langgraph"
)

func runThreads(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("threads", "threads [--owner USER] [--status S] [--meta key=value]... [--limit N] [--offset N] [--json] FILE", stdout)
	owner := fs.String("owner", "", "only threads whose record belongs to this user")
	status := fs.String("status", "", "only threads with this status (idle, busy, interrupted, error)")
	meta := metaFlags{}
	fs.Var(meta, "meta", "only threads whose metadata has key=value (value as JSON if it parses, else a string); repeatable")
	limit := fs.Int("limit", 100, "at most N threads (1..1000)")
	offset := fs.Int("offset", 0, "skip the first N threads")
	asJSON := fs.Bool("json", false, "print one JSON object per thread")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	switch {
	case *limit < 1 || *limit > 1000:
		return fs.usageErr("--limit %d is outside 1..1000", *limit)
	case *offset < 0:
		return fs.usageErr("--offset %d is negative", *offset)
	case *status != "" && !slices.Contains(threadStatuses, *status):
		return fs.usageErr("--status %q is not one of %s", *status, strings.Join(threadStatuses, ", "))
	}
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := db.ListThreads(ctx, admin.ThreadListOptions{Owner: *owner, Status: records.ThreadStatus(*status), Metadata: meta, Limit: *limit, Offset: *offset})
	if err != nil {
		return argErr(fs, pos[0], err) // the filters are all flags
	}
	if *asJSON {
		for _, t := range list {
			if err := printJSON(stdout, t); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "THREAD\tMODE\tCHECKPOINTS\tRUNS\tEVENTS\tOWNER\tSTATUS\tTITLE")
	for _, t := range list {
		owner, status, title := "-", "-", "-"
		if r := t.Record; r != nil {
			owner, status, title = orDash(r.UserID), string(r.Status), orDash(clipText(r.DisplayName, 40))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", t.ThreadID, orDash(string(t.Mode)), t.Checkpoints, t.Runs, t.Events, owner, status, title)
	}
	return tw.Flush()
}

var threadStatuses = []string{string(records.ThreadIdle), string(records.ThreadBusy), string(records.ThreadInterrupted), string(records.ThreadError)}

func runState(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("state", "state [--checkpoint ID] [--ns NS] [--reducer CHANNEL=R]... [--safe] [--json] FILE THREAD", stdout)
	cp := fs.String("checkpoint", "", "this checkpoint instead of the latest")
	ns := fs.String("ns", "", "checkpoint namespace (a subgraph's); default the root graph")
	reducers := viewReducers{}
	fs.Var(reducers, "reducer", "the reducer of a LangGraph channel the file does not name (a DeltaChannel, or one with pending writes to apply):\nCHANNEL=messages|concat|last; \"messages\" uses messages by default; repeatable")
	safe := fs.Bool("safe", false, "apply the API boundary helper: drop __pregel_* channels and inline images of hidden messages")
	asJSON := fs.Bool("json", false, "print one line of JSON instead of indented JSON")
	pos, err := parse(fs, args, "FILE", "THREAD")
	if err != nil {
		return err
	}
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := requireThread(ctx, db, pos[0], pos[1]); err != nil {
		return argErr(fs, pos[0], err)
	}
	cfg := engine.Config{ThreadID: pos[1], CheckpointNS: *ns, CheckpointID: *cp}
	view, err := readView(ctx, db, cfg, reducers)
	if err != nil {
		return argErr(fs, pos[0], err)
	}
	if len(view.Unresolved) > 0 && !*asJSON {
		fmt.Fprintf(stderr, "note: %s have a version but no value in this checkpoint: LangGraph stores no value for an empty channel "+
			"(a trigger such as __start__ or branch:to:NODE once its step has run)\n", strings.Join(view.Unresolved, ", "))
	}
	if len(view.Applied) > 0 && !*asJSON {
		fmt.Fprintf(stderr, "note: %s include the writes that finished tasks saved before the next superstep failed or was interrupted, "+
			"as LangGraph's get_state shows them; --checkpoint %s shows the checkpoint without them\n", strings.Join(view.Applied, ", "), view.Config.CheckpointID)
	}
	if *safe {
		view.Values = engine.SafeForBrowser(view.Values)
	}
	if *asJSON {
		return printJSON(stdout, view)
	}
	return printIndented(stdout, view)
}

// stateView is what state prints: the engine's view of a checkpoint, and
// for a LangGraph thread what langgraph.View rebuilt.
type stateView struct {
	engine.StateView
	// DeltaChannels lists the DeltaChannels rebuilt from their snapshot
	// and writes; Applied the channels given the pending writes of the
	// head's next superstep, as LangGraph's get_state applies them.
	DeltaChannels []string `json:"delta_channels,omitempty"`
	Applied       []string `json:"applied_pending_writes,omitempty"`
}

// readView reads one checkpoint's state: a thread-API thread as the engine
// rebuilds it, a LangGraph thread (a saver's, an import's) as LangGraph's
// get_state shows it (langgraph.View): DeltaChannels rebuilt, messages in
// one form, and at the head (no checkpoint given) the finished tasks'
// pending writes applied.
func readView(ctx context.Context, db *engine.DB, cfg engine.Config, reducers viewReducers) (stateView, error) {
	v, err := db.ReadState(ctx, cfg)
	if err != nil || v.Mode != "" {
		return stateView{StateView: v}, err
	}
	lg, err := langgraph.View(ctx, db, v.Config, langgraph.ViewOptions{Reducers: reducers, Head: cfg.CheckpointID == ""})
	var re *langgraph.ReducerError
	if errors.As(err, &re) {
		return stateView{}, fmt.Errorf("%w; say which with --reducer %s=messages|concat|last", err, shellQuote(re.Channel))
	}
	if err != nil {
		return stateView{}, err
	}
	v.Values, v.Unresolved = lg.Values, lg.Empty
	return stateView{StateView: v, DeltaChannels: lg.Delta, Applied: lg.Applied}, nil
}

// historyValues is a line of history --values.
type historyValues struct {
	admin.LogEntry
	Values map[string]any `json:"values"`
}

// viewReducers collects repeated --reducer CHANNEL=REDUCER flags.
type viewReducers map[string]langgraph.Reducer

func (m viewReducers) String() string { return "" }

func (m viewReducers) Set(s string) error {
	ch, name, ok := strings.Cut(s, "=")
	r, err := langgraph.ParseReducer(name)
	if !ok || ch == "" || err != nil {
		return fmt.Errorf("%q is not CHANNEL=messages|concat|last", s)
	}
	m[ch] = r
	return nil
}

func runHistory(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("history", "history [--limit N] [--before ID] [--ns NS] [--values [--reducer CHANNEL=R]...] [--json] FILE THREAD", stdout)
	limit := fs.Int("limit", 0, "at most N checkpoints (0: all)")
	before := fs.String("before", "", "only checkpoints older than this id")
	ns := fs.String("ns", "", "checkpoint namespace (a subgraph's); default the root graph")
	values := fs.Bool("values", false, "add each checkpoint's values, as state shows them (LangGraph's get_state_history for a LangGraph thread); implies --json")
	reducers := viewReducers{}
	fs.Var(reducers, "reducer", "with --values: the reducer of a LangGraph channel the file does not name (see state); repeatable")
	asJSON := fs.Bool("json", false, "print one JSON object per checkpoint")
	pos, err := parse(fs, args, "FILE", "THREAD")
	if err != nil {
		return err
	}
	if *limit < 0 {
		return fs.usageErr("--limit %d is negative", *limit)
	}
	if len(reducers) > 0 && !*values {
		return fs.usageErr("--reducer needs --values")
	}
	*asJSON = *asJSON || *values
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := requireThread(ctx, db, pos[0], pos[1]); err != nil {
		return argErr(fs, pos[0], err)
	}
	var tw *tabwriter.Writer
	if !*asJSON {
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CHECKPOINT\tPARENT\tSTEP\tSOURCE\tCHANGED\tSTORED\tWRITES")
	}
	// --before must name a checkpoint of the thread: the log is read from
	// the head and printed from the entry after it, so a mistyped id is an
	// error rather than a list of every checkpoint whose id sorts lower. (It
	// reads no values, so the entries skipped cost little.)
	n, skipping := 0, *before != ""
	o := admin.LogOptions{Namespace: *ns, Limit: *limit}
	if skipping {
		o.Limit = 0
	}
	for e, err := range db.CheckpointLog(ctx, pos[1], o) {
		if err != nil {
			return argErr(fs, pos[0], err)
		}
		if skipping {
			skipping = e.CheckpointID != *before
			continue
		}
		if *limit > 0 && n == *limit {
			break
		}
		n++
		if *values {
			// A checkpoint named by its id: LangGraph applies no pending
			// writes to it (get_state_history).
			v, err := readView(ctx, db, engine.Config{ThreadID: pos[1], CheckpointNS: *ns, CheckpointID: e.CheckpointID}, reducers)
			if err != nil {
				return argErr(fs, pos[0], err)
			}
			if err := printJSON(stdout, historyValues{LogEntry: e, Values: v.Values}); err != nil {
				return err
			}
			continue
		}
		if *asJSON {
			if err := printJSON(stdout, e); err != nil {
				return err
			}
			continue
		}
		stored := strings.Join(e.Stored, ",")
		if e.Snapshot {
			stored += " (snapshot)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\n", e.CheckpointID, orDash(e.ParentID), e.Step, orDash(e.Source),
			orDash(strings.Join(e.Changed, ",")), orDash(stored), e.PendingWrites)
	}
	if skipping {
		return fmt.Errorf("%s: %w: no checkpoint %q in thread %q (namespace %q)", pos[0], engine.ErrNotFound, *before, pos[1], *ns)
	}
	if n == 0 && *before == "" {
		return fmt.Errorf("%s: %w: no checkpoint in thread %q (namespace %q)", pgurl.Redacted(pos[0]), engine.ErrNotFound, pos[1], *ns)
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}

func runRuns(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("runs", "runs [--json] FILE THREAD", stdout)
	asJSON := fs.Bool("json", false, "print one JSON object per run")
	pos, err := parse(fs, args, "FILE", "THREAD")
	if err != nil {
		return err
	}
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := requireThread(ctx, db, pos[0], pos[1]); err != nil {
		return argErr(fs, pos[0], err)
	}
	var tw *tabwriter.Writer
	if !*asJSON {
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tSTATUS\tMODEL\tCREATED\tTOKENS\tMESSAGES\tERROR")
	}
	for r, err := range db.Runs().List(ctx, pos[1]) {
		if err != nil {
			return argErr(fs, pos[0], err)
		}
		if *asJSON {
			if err := printJSON(stdout, r); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.RunID, r.Status, orDash(r.ModelName), r.CreatedAt.Format(time.RFC3339),
			r.TotalTokens, r.MessageCount, orDash(clipText(r.Error, 60)))
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}

func runEvents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("events", "events [--run ID] [--messages] [--json] FILE THREAD", stdout)
	run := fs.String("run", "", "only the events of this run")
	messages := fs.Bool("messages", false, "only events of category message")
	asJSON := fs.Bool("json", false, "print one JSON object per event")
	pos, err := parse(fs, args, "FILE", "THREAD")
	if err != nil {
		return err
	}
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := requireThread(ctx, db, pos[0], pos[1]); err != nil {
		return argErr(fs, pos[0], err)
	}
	thread := pos[1]
	var tw *tabwriter.Writer
	if !*asJSON {
		tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SEQ\tRUN\tTYPE\tCATEGORY\tCREATED\tCONTENT")
	}
	shown := 0
	print := func(evs []records.Event) error {
		for _, ev := range evs {
			if *run != "" && ev.RunID != *run || *messages && ev.Category != "message" {
				continue
			}
			shown++
			if *asJSON {
				if err := printJSON(stdout, ev); err != nil {
					return err
				}
				continue
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", ev.Seq, orDash(ev.RunID), ev.EventType, ev.Category,
				ev.CreatedAt.Format(time.RFC3339), clipText(contentText(ev.Content), 80))
		}
		return nil
	}
	var after int64
	for {
		var page []records.Event
		var err error
		switch {
		case *run != "":
			page, err = db.Events().ListRunEvents(ctx, thread, *run, records.RunEventQuery{AfterSeq: after, Limit: 1000})
		case *messages:
			page, err = db.Events().ListMessages(ctx, thread, records.MessageQuery{AfterSeq: &after, Limit: 1000})
		default:
			page, err = db.ThreadEvents(ctx, thread, after, 1000)
		}
		if err != nil {
			return argErr(fs, pos[0], err)
		}
		if err := print(page); err != nil {
			return err
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Seq
	}
	if *run != "" && shown == 0 {
		// Like an unknown thread, an unknown run is an error, not an
		// empty list; a run of this thread without events is not.
		r, err := db.Runs().Get(ctx, *run)
		if errors.Is(err, engine.ErrNotFound) || err == nil && r.ThreadID != thread {
			return fmt.Errorf("%s: %w: no run %q in thread %q", pos[0], engine.ErrNotFound, *run, thread)
		}
		if err != nil {
			return argErr(fs, pos[0], err)
		}
	}
	if tw != nil {
		return tw.Flush()
	}
	return nil
}

// contentText shows an event's content in one line.
func contentText(c any) string {
	switch x := c.(type) {
	case string:
		return x
	case nil:
		return ""
	case map[string]any:
		if s, ok := x["content"].(string); ok {
			return s
		}
		m := codec.Message{Content: x["content"]}
		if s := m.Text(); s != "" {
			return s
		}
	}
	var b strings.Builder
	_ = printJSON(&b, c)
	return strings.TrimSpace(b.String())
}

func runTokens(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tokens", "tokens [--active] [--json] FILE THREAD", stdout)
	active := fs.Bool("active", false, "count runs still pending or running too")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "FILE", "THREAD")
	if err != nil {
		return err
	}
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := requireThread(ctx, db, pos[0], pos[1]); err != nil {
		return argErr(fs, pos[0], err)
	}
	u, err := db.Runs().TokenUsage(ctx, pos[1], *active)
	if err != nil {
		return argErr(fs, pos[0], err)
	}
	if *asJSON {
		return printJSON(stdout, u)
	}
	fmt.Fprintf(stdout, "thread %s: %s, %d LLM calls, %d tokens (%d input, %d output)\n\n",
		pos[1], count(int(u.Runs), "run"), u.LLMCallCount, u.TotalTokens, u.TotalInputTokens, u.TotalOutputTokens)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\truns\tinput\toutput\ttotal\t")
	models := make([]string, 0, len(u.ByModel))
	for m := range u.ByModel {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, m := range models {
		x := u.ByModel[m]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", m, x.Runs, x.Input, x.Output, x.Total)
	}
	fmt.Fprintln(tw, "\t\t\t\t\t")
	fmt.Fprintln(tw, "caller\ttokens\t\t\t\t")
	fmt.Fprintf(tw, "lead agent\t%d\t\t\t\t\n", u.ByCaller.LeadAgent)
	fmt.Fprintf(tw, "subagent\t%d\t\t\t\t\n", u.ByCaller.Subagent)
	fmt.Fprintf(tw, "middleware\t%d\t\t\t\t\n", u.ByCaller.Middleware)
	// Runs that recorded totals but no split by caller: without this row the
	// callers would sum to less than the total with nothing saying why.
	if rest := u.TotalTokens - u.ByCaller.LeadAgent - u.ByCaller.Subagent - u.ByCaller.Middleware; rest > 0 {
		fmt.Fprintf(tw, "not recorded\t%d\t\t\t\t\n", rest)
	}
	return tw.Flush()
}
