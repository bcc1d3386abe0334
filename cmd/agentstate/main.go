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
	"regexp"
	"strings"

	"github.com/agentstate/agentstate/engine"
	_ "github.com/agentstate/agentstate/engine/postgres" // postgres:// URLs (native builds)
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
		{"import-langgraph", "copy the threads of a LangGraph SqliteSaver file (JS or Python) or PostgresSaver database into a file", runImportLangGraph},
		{"export-langgraph", "write a file's threads into a new LangGraph SqliteSaver file (Python's or JS's layout)", runExportLangGraph},
		{"demo", "write a sample conversation to ./agentstate.db and describe it", runDemo},
		{"bench", "run the fixed conversation workload and report size and speed per mode", runBench},
		{"upgrade", "upgrade a file written by an older agentstate to this schema version", runUpgrade},
		{"version", "this build's version, schema version and build information", runVersion},
	}
}

// usageError marks errors that should exit with code 2; usage is the
// command's synopsis, printed under the message.
type usageError struct{ msg, usage string }

func (e usageError) Error() string { return e.msg }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printHelp(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return run(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		printHelp(stdout)
		return exitOK
	case "-version", "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	for _, c := range commands {
		if c.name == args[0] {
			noteTo = stderr
			err := c.run(ctx, args[1:], stdout, stderr)
			for _, f := range afterCommand {
				f()
			}
			afterCommand, noteTo = nil, nil
			return report(stderr, c.name, err)
		}
	}
	fmt.Fprintf(stderr, "agentstate: unknown command %q\n\n", args[0])
	printHelp(stderr)
	return exitUsage
}

// report prints a command's error once, on one line (a usage error adds
// the command's synopsis), and returns the exit code: 0 ok, 1 the operation
// failed or found problems, 2 usage.
func report(stderr io.Writer, name string, err error) int {
	var ue usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "agentstate %s: %s\n", name, ue.msg)
		if ue.usage != "" {
			fmt.Fprintf(stderr, "usage: agentstate %s ('agentstate help %s' lists the flags)\n", ue.usage, name)
		}
		return exitUsage
	default:
		fmt.Fprintf(stderr, "agentstate %s: %s\n", name, errorText(err))
		return exitFailed
	}
}

// enginePrefix is the "agentstate: " that starts every engine sentinel's
// text; the command's own prefix already says it.
var enginePrefix = regexp.MustCompile(`(^|: )agentstate: `)

// errorText is what the CLI says about err: advice in terms of its own
// commands where the engine's would name Go calls, otherwise the error
// without the repeated "agentstate: ".
func errorText(err error) string {
	var mm *engine.ModeMismatchError
	if errors.As(err, &mm) {
		return modeAdvice(mm)
	}
	return enginePrefix.ReplaceAllString(err.Error(), "$1")
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "agentstate: inspect and maintain agentstate files (AI-agent state in one SQLite file)")
	fmt.Fprintln(w, "\nUsage: agentstate COMMAND [flags] [FILE]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-17s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'agentstate help COMMAND' (or 'agentstate COMMAND -h') for a command's flags.")
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 failed or problems found, 2 usage error.")
}

// flagSet is a command's flags: errors are returned, never printed by the
// flag package, so that each prints once; -h prints the synopsis and the
// flags on stdout.
type flagSet struct {
	*flag.FlagSet
	usage  string
	stdout io.Writer
}

func newFlags(name, usage string, stdout io.Writer) *flagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &flagSet{FlagSet: fs, usage: usage, stdout: stdout}
}

// usageErr is a usage error (exit 2) of this command.
func (fs *flagSet) usageErr(format string, args ...any) error {
	return usageError{fmt.Sprintf(format, args...), fs.usage}
}

// printHelp prints the usage line and each flag as the usage line spells
// it (--name; flag.PrintDefaults would print -name).
func (fs *flagSet) printHelp() {
	fmt.Fprintf(fs.stdout, "Usage: agentstate %s\n", fs.usage)
	fs.VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if arg != "" {
			line += " " + arg
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		switch def := f.DefValue; {
		case def == "" || def == "0" || def == "false":
		case fmt.Sprintf("%T", f.Value) == "*flag.stringValue":
			line += fmt.Sprintf(" (default %q)", def)
		default:
			line += fmt.Sprintf(" (default %v)", def)
		}
		fmt.Fprintln(fs.stdout, line)
	})
}

// count is "1 thread", "2 threads": n and noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// parse parses args, allowing flags after positional arguments, and checks
// the positional arguments against names (FILE, THREAD, ...).
func parse(fs *flagSet, args []string, names ...string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.printHelp()
				return nil, err
			}
			return nil, fs.usageErr("%v", err)
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
	switch {
	case len(pos) < len(names):
		return nil, fs.usageErr("missing %s", strings.Join(names[len(pos):], " "))
	case len(pos) > len(names):
		return nil, fs.usageErr("unexpected argument %q", pos[len(names)])
	}
	return pos, nil
}
