// Command agentstate inspects and maintains agentstate files. It only parses
// flags and prints: every behaviour lives in the engine package, so the tool
// and the library never disagree.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // problems found or the operation failed
	exitUsage  = 2
)

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

var commands []command

func init() {
	commands = []command{
		{"info", "schema version, mode and K, sizes, bytes and rows per surface, largest threads", runInfo},
		{"stats", "the same as info", runStats},
		{"threads", "list threads (search by owner, status, metadata key=value)", runThreads},
		{"state", "a checkpoint's materialized values as JSON", runState},
		{"history", "a thread's checkpoints, newest first, one line each", runHistory},
		{"runs", "a thread's runs, newest first", runRuns},
		{"events", "a thread's events (all, one run's, or messages only)", runEvents},
		{"tokens", "a thread's token usage by model and by caller", runTokens},
		{"verify", "check a file without changing it; exit 1 and one line per problem", runVerify},
		{"retain", "drop what retention allows (dry run unless --apply)", runRetain},
		{"vacuum", "give free pages back to the file system", runVacuum},
		{"convert", "rewrite a file (or one thread) into full or delta mode", runConvert},
		{"export", "write every surface as JSON lines to stdout", runExport},
		{"import", "read JSON lines written by export from stdin into a file", runImport},
		{"import-langgraph", "copy the threads of a LangGraph.js SqliteSaver file into a file", runImportLangGraph},
		{"demo", "write a sample conversation to ./agentstate.db and describe it", runDemo},
		{"bench", "run the fixed conversation workload and report size and speed per mode", runBench},
	}
}

// usageError marks errors that should exit with code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return run(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		printHelp(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(ctx, args[1:], stdout, stderr)
			var ue usageError
			switch {
			case err == nil:
				return exitOK
			case errors.Is(err, flag.ErrHelp):
				return exitOK
			case errors.As(err, &ue):
				fmt.Fprintf(stderr, "agentstate %s: %v\n", c.name, err)
				return exitUsage
			default:
				fmt.Fprintf(stderr, "agentstate %s: %v\n", c.name, err)
				return exitFailed
			}
		}
	}
	fmt.Fprintf(stderr, "agentstate: unknown command %q\n\n", args[0])
	printHelp(stderr)
	return exitUsage
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "agentstate: inspect and maintain agentstate files (AI-agent state in one SQLite file)")
	fmt.Fprintln(w, "\nUsage: agentstate COMMAND [flags] [FILE]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-17s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'agentstate COMMAND -h' for a command's flags. Exit codes: 0 ok, 1 failed, 2 usage.")
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: agentstate %s\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args, allowing flags after positional arguments, and checks
// the count of positional arguments.
func parse(fs *flag.FlagSet, args []string, minPos, maxPos int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	if len(pos) < minPos || len(pos) > maxPos {
		fs.Usage()
		return nil, usageError{fmt.Sprintf("expected %d to %d arguments, got %d", minPos, maxPos, len(pos))}
	}
	return pos, nil
}
