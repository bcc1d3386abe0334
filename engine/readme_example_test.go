//go:build !js && !wasip1

// The README is built with the go command, which a js or wasip1 test
// binary cannot run.

package engine_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
)

// readmeBlock is one fenced block of a Markdown page (README.md, a page
// of docs/) and the level-2 section it is in.
type readmeBlock struct {
	section, lang string
	lines         []string // as printed, the list indentation of a block inside a list item removed
}

// readmeBlocks reads the fenced blocks of the page at path (relative to
// the engine package).
func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []readmeBlock
	var cur *readmeBlock
	section, indent := "", ""
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		l := sc.Text()
		trimmed := strings.TrimLeft(l, " ")
		switch {
		case cur == nil && strings.HasPrefix(l, "## "):
			section = strings.TrimPrefix(l, "## ")
		case cur == nil && strings.HasPrefix(trimmed, "```") && trimmed != "```":
			indent = l[:len(l)-len(trimmed)]
			cur = &readmeBlock{section: section, lang: strings.TrimPrefix(trimmed, "```")}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, strings.TrimPrefix(l, indent))
		}
	}
	return blocks
}

// readmePackages are the imports the README names for its Go blocks.
var readmePackages = map[string]string{
	"context":  "context",
	"errors":   "errors",
	"fmt":      "fmt",
	"log":      "log",
	"time":     "time",
	"engine":   "github.com/agentstate/agentstate/engine",
	"codec":    "github.com/agentstate/agentstate/codec",
	"channels": "github.com/agentstate/agentstate/channels",
	"records":  "github.com/agentstate/agentstate/engine/records",
	"admin":    "github.com/agentstate/agentstate/engine/admin",
}

// readmeProgram is a section's go blocks, in order and as printed, as the
// body of main, with the imports of readmePackages that the body uses.
func readmeProgram(t *testing.T, body []string) string {
	t.Helper()
	var imports, code []string
	for _, l := range body { // an import for its side effect (docs/postgresql.md) goes to the imports
		if strings.HasPrefix(l, "import _ ") {
			imports = append(imports, "\t"+strings.TrimPrefix(l, "import "))
		} else {
			code = append(code, l)
		}
	}
	body = code
	fn := "package main\n\nfunc main() {\n" + strings.Join(body, "\n") + "\n}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", fn, 0)
	if err != nil {
		t.Fatalf("README go blocks do not parse: %v\n%s", err, fn)
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok && readmePackages[id.Name] != "" {
				used[id.Name] = true
			}
		}
		return true
	})
	for name := range used {
		imports = append(imports, "\t"+`"`+readmePackages[name]+`"`)
	}
	sort.Strings(imports)
	checkErrsAreRead(t, f)
	return "package main\n\nimport (\n" + strings.Join(imports, "\n") + "\n)\n\nfunc main() {\n" + strings.Join(body, "\n") + "\n}\n"
}

// checkErrsAreRead fails for every err that is assigned and then assigned
// again, or not at all, before anything reads it: the statement after an
// assignment to err must mention err (an `if err != nil`, errors.Is, ...),
// and the first statement of a range loop over (value, err) too.
func checkErrsAreRead(t *testing.T, f *ast.File) {
	t.Helper()
	mentions := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "err" {
				found = true
			}
			return !found
		})
		return found
	}
	assignsErr := func(s ast.Stmt) bool {
		a, ok := s.(*ast.AssignStmt)
		if !ok {
			return false
		}
		for _, l := range a.Lhs {
			if id, ok := l.(*ast.Ident); ok && id.Name == "err" {
				return true
			}
		}
		return false
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BlockStmt:
			for i, s := range n.List {
				if !assignsErr(s) {
					continue
				}
				if i+1 == len(n.List) || !mentions(n.List[i+1]) {
					t.Errorf("README go block: the err of statement %d of a block (%s) is not checked before the next statement", i+1, stmtText(s))
				}
			}
		case *ast.RangeStmt:
			if id, ok := n.Value.(*ast.Ident); ok && id.Name == "err" && (len(n.Body.List) == 0 || !mentions(n.Body.List[0])) {
				t.Errorf("README go block: a range loop does not check its err first")
			}
		}
		return true
	})
}

func stmtText(s ast.Stmt) string {
	var b strings.Builder
	ast.Inspect(s, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok && b.Len() < 60 {
			b.WriteString(id.Name + " ")
		}
		return true
	})
	return strings.TrimSpace(b.String())
}

// TestREADMEGoBlocks builds the README's Go exactly as printed, in a module
// of its own that depends on this clone the two ways "Depend on it from a
// clone" shows (a replace directive, a workspace): the README's quick start
// and docs/records.md, which goes on from it, are one main, and
// docs/postgresql.md's block another, each with only the imports the README
// names; the quick start is run and prints what its comments say.
func TestREADMEGoBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the README's programs; skipped with -short")
	}
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	programs := map[string][]string{}
	sections := []string{"Quick start", "PostgreSQL"}
	var setup []string
	for _, b := range readmeBlocks(t, "../README.md") {
		switch {
		case b.lang == "go" && b.section != "Quick start":
			t.Errorf("README: a go block under %q; the README's Go is its quick start", b.section)
		case b.lang == "go":
			programs["Quick start"] = append(programs["Quick start"], b.lines...)
		case b.section == "Depend on it from a clone" && b.lang == "sh" && strings.Contains(strings.Join(b.lines, "\n"), "go mod edit"):
			setup = b.lines
		}
	}
	for page, program := range map[string]string{"../docs/records.md": "Quick start", "../docs/postgresql.md": "PostgreSQL"} {
		n := 0
		for _, b := range readmeBlocks(t, page) {
			if b.lang == "go" {
				programs[program] = append(programs[program], b.lines...)
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s has no go block", page)
		}
	}
	if len(programs["Quick start"]) == 0 {
		t.Fatal("the README's quick start has no go block")
	}
	if len(setup) == 0 {
		t.Fatal(`no sh block with "go mod edit" under "Depend on it from a clone"`)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	work := regexp.MustCompile("`(go work init [^`]+)`").FindSubmatch(readme)
	if work == nil {
		t.Fatal("README names no `go work init ...` line")
	}

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := os.Symlink(root, filepath.Join(tmp, "agentstate")); err != nil { // the clone, beside the project
		t.Fatal(err)
	}
	// The replace directive's go mod tidy loads the whole module graph: on a
	// cold module cache it fetches a few go.mod files from the module proxy,
	// as this module's own first build does; the workspace is offline.
	env := append(os.Environ(), "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod", "GOWORK=off")
	run := func(dir string, env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		if args[0] == "go" {
			cmd.Path = goBin
		}
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		return string(out)
	}
	sources := map[string]string{}
	for _, section := range sections {
		sources[section] = readmeProgram(t, programs[section])
	}
	if !strings.Contains(sources["PostgreSQL"], `_ "github.com/agentstate/agentstate/engine/postgres"`) {
		t.Error("docs/postgresql.md's Go does not import engine/postgres, without which Open refuses its URL")
	}
	project := func(name string) string {
		dir := filepath.Join(tmp, name)
		for i, section := range sections {
			pkg := filepath.Join(dir, []string{"quickstart", "postgres"}[i])
			if err := os.MkdirAll(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pkg, "main.go"), []byte(sources[section]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		run(dir, env, "go", "mod", "init", "example.com/"+name)
		return dir
	}

	// A replace directive: the sh block's commands, as printed.
	app := project("app")
	for _, l := range setup {
		if strings.TrimSpace(l) != "" {
			run(app, env, strings.Fields(l)...)
		}
	}
	run(app, env, "go", "build", "-o", filepath.Join(app, "bin")+string(filepath.Separator), "./...")
	cwd := t.TempDir() // the quick start writes agent.db
	out := run(cwd, env, filepath.Join(app, "bin", "quickstart"))
	want := []string{
		"2 Sunny, 24 degrees.",
		"1 2", "0 1", "-1 0",
		"1 likes tea",
		"true",
		"1 Sure!",
		"15 12 3",
		"1 false",
	}
	if got := strings.Split(strings.TrimSpace(out), "\n"); !slices.Equal(got, want) {
		t.Errorf("the README's quick start printed\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}
	// What the blocks' comments say they print is what they print.
	printed := regexp.MustCompile(`fmt\.Println\(.*\) // ([^:]+)`)
	for _, l := range programs[sections[0]] {
		if m := printed.FindStringSubmatch(l); m != nil && !slices.Contains(want, strings.TrimSpace(m[1])) {
			t.Errorf("README: %q says it prints %q, which the program does not print", strings.TrimSpace(l), m[1])
		}
	}
	if _, err := os.Stat(filepath.Join(cwd, "agent.db")); err != nil {
		t.Errorf("the quick start wrote no agent.db: %v", err)
	}

	// A workspace: the go.mod is left alone.
	ws := project("ws")
	wsEnv := append(os.Environ(), "GOPROXY=off", "GOSUMDB=off", "GOTOOLCHAIN=local", "GOFLAGS=")
	run(ws, wsEnv, strings.Fields(string(work[1]))...)
	run(ws, wsEnv, "go", "vet", "./...")
}
