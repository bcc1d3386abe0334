package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"text/tabwriter"

	"github.com/agentstate/agentstate/engine"
)

func runInfo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("info", "info [--json] FILE", stderr)
	asJSON := fs.Bool("json", false, "print one JSON object")
	pos, err := parse(fs, args, 1, 1)
	if err != nil {
		return err
	}
	if _, err := os.Stat(pos[0]); err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	opts := engine.DefaultOptions()
	opts.ReadOnly, opts.Mode = true, engine.ModeAuto
	db, err := engine.Open(ctx, pos[0], &opts)
	if err != nil {
		return err
	}
	defer db.Close()
	in, err := db.Info(ctx)
	if err != nil {
		return err
	}
	return printInfo(stdout, in, *asJSON)
}

func printInfo(w io.Writer, in engine.Info, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(in)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "path\t%s\n", in.Path)
	fmt.Fprintf(tw, "schema version\t%d\n", in.SchemaVersion)
	fmt.Fprintf(tw, "application id\t0x%08x\n", in.ApplicationID)
	fmt.Fprintf(tw, "page size\t%d\n", in.PageSize)
	fmt.Fprintf(tw, "pages\t%d (%d free)\n", in.PageCount, in.FreePages)
	fmt.Fprintf(tw, "file bytes\t%d\n", in.FileBytes)
	fmt.Fprintf(tw, "wal bytes\t%d\n", in.WALBytes)
	names := make([]string, 0, len(in.Rows))
	for n := range in.Rows {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(tw, "rows %s\t%d\n", n, in.Rows[n])
	}
	return tw.Flush()
}
