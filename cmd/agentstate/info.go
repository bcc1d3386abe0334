package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/internal/pgurl"
)

func runInfo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return infoCommand(ctx, "info", args, stdout, stderr)
}

func runStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return infoCommand(ctx, "stats", args, stdout, stderr)
}

func infoCommand(ctx context.Context, name string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(name, name+" [--threads N] [--json] FILE", stdout)
	largest := fs.Int("threads", 10, "how many of the largest threads to list")
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, "FILE")
	if err != nil {
		return err
	}
	if *largest < 0 {
		return fs.usageErr("--threads %d is negative", *largest)
	}
	db, err := openFile(ctx, pos[0], true)
	if err != nil {
		return err
	}
	defer db.Close()
	st, err := db.Stats(ctx, *largest)
	if err != nil {
		return inFile(pos[0], err)
	}
	if *asJSON {
		return printJSON(stdout, st)
	}
	return printStats(stdout, st)
}

func printStats(w io.Writer, st admin.Stats) error {
	in := st.Info
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "path\t%s\n", in.Path)
	fmt.Fprintf(tw, "schema version\t%d\n", in.SchemaVersion)
	fmt.Fprintf(tw, "application id\t0x%08x\n", in.ApplicationID)
	if in.Shared {
		fmt.Fprintf(tw, "shared file\tyes: agentstate's tables are agentstate_*, the header fields above its agentstate_header table's\n")
	}
	if in.Mode == channels.ModeDelta {
		fmt.Fprintf(tw, "mode\tdelta (K=%d)\n", in.SnapshotEvery)
	} else {
		fmt.Fprintf(tw, "mode\t%s\n", in.Mode)
	}
	if pgurl.Is(in.Path) {
		// A server's pages are its own: what the schema's tables and
		// indexes take, in its block size.
		fmt.Fprintf(tw, "block size\t%d\n", in.PageSize)
		fmt.Fprintf(tw, "stored bytes\t%d (tables and indexes)\n", in.FileBytes)
	} else {
		fmt.Fprintf(tw, "page size\t%d\n", in.PageSize)
		fmt.Fprintf(tw, "pages\t%d (%d free)\n", in.PageCount, in.FreePages)
		fmt.Fprintf(tw, "file bytes\t%d\n", in.FileBytes)
		fmt.Fprintf(tw, "wal bytes\t%d\n", in.WALBytes)
	}
	hc := st.HistoryCache
	if hc.Enabled {
		fmt.Fprintf(tw, "history cache\t%d bytes max (this handle: %d entries, %d hits, %d misses)\n", hc.MaxBytes, hc.Entries, hc.Hits, hc.Misses)
	} else {
		fmt.Fprintf(tw, "history cache\toff\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "surface\trows\tbytes\t\n")
	for _, s := range st.Surfaces {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", s.Name, s.Rows, s.Bytes)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.LargestThreads) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "largest threads\tmode\tcheckpoints\tbytes\t\n")
		for _, t := range st.LargestThreads {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t\n", t.ThreadID, orDash(string(t.Mode)), t.Checkpoints, t.Bytes)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	names := make([]string, 0, len(in.Rows))
	for n := range in.Rows {
		names = append(names, n)
	}
	sort.Strings(names)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "table\trows\t\n")
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t%d\t\n", n, in.Rows[n])
	}
	return tw.Flush()
}
