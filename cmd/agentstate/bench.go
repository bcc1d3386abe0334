package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/agentstate/agentstate/internal/pgurl"
	"github.com/agentstate/agentstate/internal/workload"
)

// benchResult is one line of `bench --json`; its fields are the contract
// of the command.
type benchResult struct {
	Mode            string  `json:"mode"`
	Every           *int    `json:"every"`
	Turns           int     `json:"turns"`
	Messages        int     `json:"messages"`
	RawMessageBytes int64   `json:"raw_message_bytes"`
	FileBytes       int64   `json:"file_bytes"`
	MsPerTurn       float64 `json:"ms_per_turn"`
	HeadReadMsCold  float64 `json:"head_read_ms_cold"`
	HeadReadMsWarm  float64 `json:"head_read_ms_warm"`

	samples []sample // file bytes along the run, for --plot
}

type sample struct {
	turn  int
	bytes int64
}

const benchThread = "bench"

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) (retErr error) {
	fs := newFlags("bench", "bench [--turns N] [--mode full|delta|both] [--every K] [--retain] [--db FILE] [--json] [--plot FILE.svg]", stdout)
	turns := fs.Int("turns", 400, "conversation turns (a 200-byte human and an 800-byte AI message each)")
	mode := fs.String("mode", "both", "channel mode: full, delta or both")
	every := fs.Int("every", 10, "delta snapshot cadence K")
	retain := fs.Bool("retain", true, "run delta retention automatically as snapshots are written (the default; --retain=false keeps every snapshot)")
	dbPath := fs.String("db", "", "write to FILE and keep it (single mode only); default a temporary file")
	asJSON := fs.Bool("json", false, "print one JSON object per mode")
	plot := fs.String("plot", "", "write an SVG chart of file bytes against turns")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	var modes []channels.Mode
	switch m := channels.Mode(*mode); m {
	case channels.ModeFull, channels.ModeDelta:
		modes = []channels.Mode{m}
	case "both":
		modes = []channels.Mode{channels.ModeFull, channels.ModeDelta}
	default:
		return fs.usageErr("--mode %q is not full, delta or both", *mode)
	}
	if *turns < 1 {
		return fs.usageErr("--turns %d must be at least 1", *turns)
	}
	if *every < 1 {
		return fs.usageErr("--every %d must be at least 1", *every)
	}
	if *dbPath != "" && len(modes) > 1 {
		return fs.usageErr("--db needs a single --mode")
	}
	if *dbPath != "" {
		if err := notDir(*dbPath); err != nil {
			return err
		}
	}
	// The plot's file is opened before the bench runs, so that a bad path
	// fails at once rather than after minutes of work; it is written (and
	// truncated) only at the end, and removed if this run created it and
	// then failed.
	var plotFile *os.File
	if *plot != "" {
		_, statErr := os.Stat(*plot)
		f, err := os.OpenFile(*plot, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		plotFile = f
		defer func() {
			plotFile.Close()
			if retErr != nil && statErr != nil {
				os.Remove(*plot)
			}
		}()
	}
	prog := newProgress(stderr, *asJSON)
	var results []benchResult
	for _, m := range modes {
		path := *dbPath
		if path == "" {
			dir, err := os.MkdirTemp("", "agentstate-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			path = filepath.Join(dir, "bench.db")
		} else if exists(path) {
			return fmt.Errorf("%s already exists; bench writes a fresh file (or schema)", pgurl.Redacted(path))
		}
		r, err := benchOne(ctx, path, m, *every, *turns, *retain, *plot != "", prog)
		if err != nil {
			return err
		}
		results = append(results, r)
		if *asJSON {
			if err := json.NewEncoder(stdout).Encode(r); err != nil {
				return err
			}
		}
	}
	prog.done()
	if !*asJSON {
		printBench(stdout, results)
	}
	if plotFile == nil {
		return nil
	}
	if err := plotFile.Truncate(0); err != nil {
		return err
	}
	if _, err := plotFile.WriteString(plotSVG(results, *retain)); err != nil {
		return err
	}
	return plotFile.Close()
}

func benchOne(ctx context.Context, path string, mode channels.Mode, every, turns int, retain, sampleSizes bool, prog *progress) (benchResult, error) {
	opts := engine.DefaultOptions()
	opts.Mode, opts.SnapshotEvery, opts.AutoRetain = mode, every, retain
	db, err := engine.Open(ctx, path, &opts)
	if err != nil {
		return benchResult{}, err
	}
	defer db.Close()
	r := benchResult{Mode: string(mode), Turns: turns, Messages: 2 * turns}
	if mode == channels.ModeDelta {
		r.Every = &every
	}
	sampleEvery := max(1, turns/50)
	var spent time.Duration
	for i := range turns {
		start := time.Now()
		for _, m := range workload.Turn(i) {
			step := engine.Step{Tasks: []engine.TaskWrites{{TaskID: m.Type, Writes: []engine.ChannelWrite{{Channel: engine.MessagesChannel, Value: m}}}}}
			if _, err := db.Commit(ctx, benchThread, step); err != nil {
				return r, err
			}
		}
		spent += time.Since(start)
		r.RawMessageBytes += workload.HumanBytes + workload.AIBytes
		if sampleSizes && ((i+1)%sampleEvery == 0 || i == turns-1) {
			in, err := db.Info(ctx)
			if err != nil {
				return r, err
			}
			r.samples = append(r.samples, sample{i + 1, in.PageSize * in.PageCount})
		}
		prog.show("bench %s: turn %d/%d", mode, i+1, turns)
	}
	r.MsPerTurn = ms(spent) / float64(turns)
	head := engine.Config{ThreadID: benchThread}
	const warmReads = 20
	start := time.Now()
	for range warmReads {
		if _, err := db.State(ctx, head); err != nil {
			return r, err
		}
	}
	r.HeadReadMsWarm = ms(time.Since(start)) / warmReads
	if _, err := db.CheckpointWAL(ctx); err != nil {
		return r, err
	}
	if pgurl.Is(path) {
		r.FileBytes = storedSize(ctx, db, path)
	}
	if err := db.Close(); err != nil {
		return r, err
	}
	if !pgurl.Is(path) {
		fi, err := os.Stat(path)
		if err != nil {
			return r, err
		}
		r.FileBytes = fi.Size()
	}
	// Cold: a new handle with empty caches.
	opts.Mode = channels.ModeAuto
	cold, err := engine.Open(ctx, path, &opts)
	if err != nil {
		return r, err
	}
	defer cold.Close()
	start = time.Now()
	s, err := cold.State(ctx, head)
	if err != nil {
		return r, err
	}
	r.HeadReadMsCold = ms(time.Since(start))
	if got := len(s.Values[engine.MessagesChannel].([]codec.Message)); got != r.Messages {
		return r, fmt.Errorf("head holds %d messages, want %d", got, r.Messages)
	}
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func printBench(w io.Writer, rs []benchResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tK\tturns\tmessages\traw bytes\tfile bytes\tfile/raw\tms/turn\thead read cold ms\thead read warm ms\t")
	for _, r := range rs {
		k := "-"
		if r.Every != nil {
			k = fmt.Sprint(*r.Every)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.2f\t%.3f\t%.3f\t%.3f\t\n", r.Mode, k, r.Turns, r.Messages,
			r.RawMessageBytes, r.FileBytes, float64(r.FileBytes)/float64(r.RawMessageBytes), r.MsPerTurn, r.HeadReadMsCold, r.HeadReadMsWarm)
	}
	tw.Flush()
}
