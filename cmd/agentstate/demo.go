package main

import (
	"context"
	"io"

	"github.com/agentstate/agentstate/engine"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("demo", "demo [--db FILE] [--json]", stderr)
	path := fs.String("db", "agentstate.db", "file to write the demo conversation to")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if _, err := parse(fs, args, 0, 0); err != nil {
		return err
	}
	db, err := engine.Open(ctx, *path, nil)
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
