package codesize

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const (
	// maxDocLines bounds the `go doc -all` page of every exported package.
	maxDocLines = 1000
	// maxEngineTypes bounds the types package engine exports.
	maxEngineTypes = 30
)

// goDoc runs `go doc` in the repository with args.
func goDoc(t *testing.T, root string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", append([]string{"doc"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go doc %s: %v", strings.Join(args, " "), err)
	}
	return out
}

// TestDocPages keeps each audience's page short (issue 23): no exported
// package's `go doc -all` over maxDocLines lines, and no more than
// maxEngineTypes types in package engine. Details belong in docs/.
func TestDocPages(t *testing.T) {
	root := repoRoot(t)
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Name}}", "./...")
	cmd.Dir = root
	list, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		path, name, _ := strings.Cut(line, " ")
		if name == "main" || strings.Contains(path+"/", "/internal/") || strings.Contains(path, "/testdata/") {
			continue
		}
		pages++
		if n := bytes.Count(goDoc(t, root, "-all", path), []byte("\n")); n > maxDocLines {
			t.Errorf("go doc -all %s: %d lines, over %d; move details to docs/ or types to the audience's package", path, n, maxDocLines)
		}
	}
	if pages < 5 {
		t.Fatalf("only %d exported packages found: the listing is wrong", pages)
	}
	types := 0
	for _, l := range strings.Split(string(goDoc(t, root, "-short", "./engine")), "\n") {
		if strings.HasPrefix(l, "type ") {
			types++
		}
	}
	if types == 0 || types > maxEngineTypes {
		t.Errorf("package engine exports %d types; want 1..%d", types, maxEngineTypes)
	}
}
