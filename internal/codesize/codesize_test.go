// Package codesize holds a test that keeps the repository's code cut by
// concept (issue 23): no non-test Go file over maxFileLines lines and no
// function over maxFuncLines lines.
package codesize

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	maxFileLines = 800
	maxFuncLines = 120
)

// allowed lists what may exceed the limits for now: a file by its path
// from the repository root, a function as "path Name" (a method by its
// name alone). Each entry says why; it is empty, and an entry no longer
// needed fails the test until it is removed.
var allowed = map[string]string{}

// TestCodeSize fails naming each non-test Go file of the repository over
// maxFileLines lines and each function over maxFuncLines lines (from its
// func keyword to its closing brace), but those allowed.
func TestCodeSize(t *testing.T) {
	root := repoRoot(t)
	over, err := oversized(root, maxFileLines, maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, o := range over {
		if _, ok := allowed[o.name]; ok {
			seen[o.name] = true
			continue
		}
		t.Errorf("%s: %s; cut it by concept (issue 23)", o.name, o.what)
	}
	for _, name := range slices.Sorted(maps.Keys(allowed)) {
		if !seen[name] {
			t.Errorf("%s is within the limits now: remove it from allowed", name)
		}
	}
}

// An overSize is a file or function over its limit.
type overSize struct {
	name string // "path" or "path Func"
	what string
}

// oversized walks the non-test Go files under root (skipping node_modules,
// testdata and dot directories) and returns the files over maxFile lines
// and the functions over maxFunc lines.
func oversized(root string, maxFile, maxFunc int) ([]overSize, error) {
	var out []overSize
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "node_modules" || name == "testdata" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if n := bytes.Count(data, []byte("\n")); n > maxFile {
			out = append(out, overSize{rel, fmt.Sprintf("%d lines, more than %d", n, maxFile)})
		}
		f, err := parser.ParseFile(fset, p, data, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > maxFunc {
				out = append(out, overSize{rel + " " + fd.Name.Name, fmt.Sprintf("function of %d lines, more than %d", n, maxFunc)})
			}
		}
		return nil
	})
	return out, err
}

// repoRoot is the directory of the module's go.mod, above the test's.
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}
