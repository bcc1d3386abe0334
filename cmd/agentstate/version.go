package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/agentstate/agentstate/engine"
)

// versionInfo is what `agentstate version --json` prints.
type versionInfo struct {
	Version       string `json:"version"`
	Module        string `json:"module"`
	SchemaVersion int    `json:"schema_version"`
	ExportFormat  int    `json:"export_format"`
	Go            string `json:"go"`
	Platform      string `json:"platform"`
	Revision      string `json:"vcs_revision,omitempty"`
	Time          string `json:"vcs_time,omitempty"`
	Modified      bool   `json:"vcs_modified,omitempty"`
}

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("version", "version [--json]", stdout)
	asJSON := fs.Bool("json", false, "print one JSON object")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	v := versionInfo{Version: "unknown", SchemaVersion: engine.SchemaVersion, ExportFormat: engine.ExportFormat,
		Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v.Version, v.Module = bi.Main.Version, bi.Main.Path
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Revision = s.Value
			case "vcs.time":
				v.Time = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if *asJSON {
		return printJSON(stdout, v)
	}
	fmt.Fprintf(stdout, "agentstate %s (%s)\n", v.Version, v.Module)
	fmt.Fprintf(stdout, "schema version %d, export format %d\n", v.SchemaVersion, v.ExportFormat)
	fmt.Fprintf(stdout, "built with %s for %s", v.Go, v.Platform)
	if v.Revision != "" {
		fmt.Fprintf(stdout, " from revision %s", v.Revision)
		if v.Time != "" {
			fmt.Fprintf(stdout, " (%s)", v.Time)
		}
		if v.Modified {
			fmt.Fprint(stdout, " with local changes")
		}
	}
	fmt.Fprintln(stdout)
	return nil
}
