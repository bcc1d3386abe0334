package engine

import (
	"regexp"
	"testing"
)

// addColumnRE is the pattern addColumn implements by hand.
var addColumnRE = regexp.MustCompile(`(?is)^(?:\s+|--[^\n]*\n|/\*.*?\*/)*ALTER\s+TABLE\s+"?(\w+)"?\s+ADD\s+(?:COLUMN\s+)?"?(\w+)"?`)

func checkAddColumn(t *testing.T, stmt string) {
	t.Helper()
	table, column, ok := addColumn(stmt)
	m := addColumnRE.FindStringSubmatch(stmt)
	if ok != (m != nil) || ok && (table != m[1] || column != m[2]) {
		t.Fatalf("%q: addColumn = %q %q %v, the pattern says %q", stmt, table, column, ok, m)
	}
}

func TestAddColumnMatchesThePattern(t *testing.T) {
	for _, s := range []string{
		"ALTER TABLE runs ADD COLUMN model_name TEXT",
		"alter table runs add column x",
		"ALTER TABLE \"runs\" ADD \"x\" TEXT;",
		"\n\t-- a comment\n/* another\n*/ ALTER  TABLE\truns\nADD COLUMN\r\nx;",
		"-- no newline ALTER TABLE runs ADD COLUMN x",
		"/* unterminated ALTER TABLE runs ADD COLUMN x",
		"ALTER TABLE runs ADD COLUMN",
		"ALTER TABLE runs ADD COLUMNX",
		"ALTER TABLE runs ADD COLUMN \"",
		"ALTER TABLE runs ADD COLUMN \"é\"",
		"ALTER TABLE runs ADDx y",
		"ALTER TABLE runs\"ADD y",
		"ALTER TABLE runs\" ADD y",
		"ALTER TABLEruns ADD y",
		"ALTER TABLE ADD COLUMN y",
		"ALTER TABLE r ADD",
		"ALTER TABLE r ADD ",
		"CREATE TABLE t(x); ALTER TABLE t ADD COLUMN y",
		"ALTER TABLE t RENAME COLUMN a TO b",
		"",
		"   ",
		"\vALTER TABLE t ADD y",
	} {
		checkAddColumn(t, s)
	}
}

// fuzz budget: 20000
func FuzzAddColumn(f *testing.F) {
	f.Add("ALTER TABLE runs ADD COLUMN model_name TEXT")
	f.Add("-- c\n/* d */ALTER TABLE \"a\" ADD \"b\"")
	f.Fuzz(checkAddColumn)
}

// TestSchemaVersionCountsMigrations: a new migration file must bump the
// constant, or files would be written at one version and labelled another.
func TestSchemaVersionCountsMigrations(t *testing.T) {
	if len(migrations()) != SchemaVersion {
		t.Fatalf("migrations/ has %d files, SchemaVersion is %d", len(migrations()), SchemaVersion)
	}
	for i, m := range migrations() {
		if m.version != i+1 {
			t.Fatalf("migration %d (%s) is numbered %d", i+1, m.name, m.version)
		}
	}
}
