//go:build !js && !wasip1

package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// maxSQLFiles is how many non-test files of engine/ may hold SQL text that
// names one table (issue 23, "code by table"): a table's statements live in
// its sql_<table>.go file, both dialects side by side, and the files whose
// logic needs them name the constants.
const maxSQLFiles = 3

// TestTableSQLFiles fails naming each table of the migrations whose SQL
// text is in more than maxSQLFiles non-test files of engine/ (not its
// subpackages), with the files.
//
// What counts: every string in the Go source that reads as SQL, where
// adjacent literals joined by + are read as one string (a part that is not
// a literal, a constant's name say, reads as "?"), so that a statement cut
// over lines counts once. A string is SQL when it holds a statement keyword
// (SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, DROP, PRAGMA, WITH,
// VACUUM); it names a table when the table's name follows FROM, INTO,
// UPDATE, JOIN, TABLE or EXISTS (optionally quoted), so a join names each
// of its tables. Comments do not count, nor do the migrations' .sql files.
//
// What does not count: a table's name as a bare string ("checkpoints"),
// which the generic builders take: the export's and import's statements
// are built at run time from the table list and its columns (export.go),
// Info counts the rows of every table the catalogue names (info.go), and
// Verify lists the threads of three tables by name (verify.go). The rule
// is about statements written out, and those builders know no table's
// SQL. Nor do the catalogue's (sqlite_master, pg_catalog) and the
// connection's PRAGMAs, which name no table of the migrations.
func TestTableSQLFiles(t *testing.T) {
	tables := migrationTables(t)
	byTable := sqlTableFiles(t, tables)
	for _, name := range slices.Sorted(maps.Keys(byTable)) {
		files := byTable[name]
		if _, ok := sqlFilesAllowed[name]; ok {
			if len(files) <= maxSQLFiles {
				t.Errorf("%s: SQL in %d files now: remove it from sqlFilesAllowed", name, len(files))
			}
			continue
		}
		if len(files) > maxSQLFiles {
			t.Errorf("%s: SQL in %d files (at most %d): %s", name, len(files), maxSQLFiles, strings.Join(files, " "))
		}
	}
}

// sqlFilesAllowed lists the tables whose SQL may be spread wider, each with
// why; it is empty, and an entry no longer needed fails the test until it
// is removed.
var sqlFilesAllowed = map[string]string{}

var createTableRE = regexp.MustCompile(`(?i)CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?"?(\w+)`)

// migrationTables are the tables the migrations of both dialects create.
func migrationTables(t *testing.T) map[string]bool {
	t.Helper()
	tables := map[string]bool{}
	for _, dir := range []string{"migrations", "migrations_pg"} {
		paths, err := filepath.Glob(filepath.Join(dir, "*.sql"))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range createTableRE.FindAllStringSubmatch(string(b), -1) {
				tables[m[1]] = true
			}
		}
	}
	if len(tables) == 0 {
		t.Fatal("no CREATE TABLE in migrations/ or migrations_pg/")
	}
	return tables
}

var (
	sqlKeywordRE = regexp.MustCompile(`\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|PRAGMA|WITH|VACUUM)\b`)
	sqlTableRE   = regexp.MustCompile(`\b(?:FROM|INTO|UPDATE|JOIN|TABLE|EXISTS)\s+"?(\w+)`)
)

// sqlTableFiles maps each table to the sorted non-test files of engine/
// whose SQL strings name it.
func sqlTableFiles(t *testing.T, tables map[string]bool) map[string][]string {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]map[string]bool{}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range goStrings(f) {
			if !sqlKeywordRE.MatchString(s.text) {
				continue
			}
			for _, m := range sqlTableRE.FindAllStringSubmatch(s.text, -1) {
				if tables[m[1]] {
					if testing.Verbose() {
						t.Logf("%s: %s", fset.Position(s.pos), m[1])
					}
					if seen[m[1]] == nil {
						seen[m[1]] = map[string]bool{}
					}
					seen[m[1]][p] = true
				}
			}
		}
	}
	out := map[string][]string{}
	for name, files := range seen {
		for f := range files {
			out[name] = append(out[name], f)
		}
		slices.Sort(out[name])
	}
	return out
}

// A goString is a string of the source and where it starts.
type goString struct {
	pos  token.Pos
	text string
}

// goStrings are the file's string literals, those joined by + read as one.
func goStrings(f *ast.File) []goString {
	var out []goString
	ast.Inspect(f, func(n ast.Node) bool {
		switch e := n.(type) {
		case *ast.BinaryExpr:
			if e.Op != token.ADD {
				return true
			}
			var b strings.Builder
			if !joinStrings(e, &b) {
				return true // not a string sum: look inside
			}
			out = append(out, goString{e.Pos(), b.String()})
			return false
		case *ast.BasicLit:
			if s, ok := stringLit(e); ok {
				out = append(out, goString{e.Pos(), s})
			}
		}
		return true
	})
	return out
}

// joinStrings writes a sum of strings into b, "?" for each part that is
// not a literal; false when the sum holds no string literal.
func joinStrings(e ast.Expr, b *strings.Builder) bool {
	switch e := e.(type) {
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			l := joinStrings(e.X, b)
			r := joinStrings(e.Y, b)
			return l || r
		}
	case *ast.ParenExpr:
		return joinStrings(e.X, b)
	case *ast.BasicLit:
		if s, ok := stringLit(e); ok {
			b.WriteString(s)
			return true
		}
	}
	b.WriteString(" ? ")
	return false
}

func stringLit(e *ast.BasicLit) (string, bool) {
	if e.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(e.Value)
	return s, err == nil
}
