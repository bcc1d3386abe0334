package engine

import (
	"strings"
	"sync"
)

// A shared SQLite file (Options.SharedFile, docs/format.md "Shared files"):
// agentstate lives beside another tool's tables (DeerFlow's SQLAlchemy and
// alembic tables in deerflow.db) without claiming the file. Every object of
// ours is named with sharedPrefix, the header fields live in the marker
// table sharedMarker instead of the SQLite header (application_id and
// user_version stay the other tool's), and nothing of theirs is read,
// written, rebuilt or vacuumed. The engine's SQL stays as it is: a shared
// handle's connections rewrite our names in each statement once
// (sharedTranslate), as a PostgreSQL handle's translate theirs.

// sharedPrefix starts the name of every table and index agentstate creates
// in a shared file.
const sharedPrefix = "agentstate_"

// sharedMarker is the table that marks a shared file as holding agentstate
// and stands for the header fields: one row, the application id
// (ApplicationID) and the schema version.
const sharedMarker = sharedPrefix + "header"

const (
	sqlSharedMarkerCreate = `CREATE TABLE agentstate_header (
    application_id INTEGER NOT NULL,
    schema_version INTEGER NOT NULL
)`
	// Our objects in the catalogue, and whether the marker is among them.
	sqlSharedState  = `SELECT count(*), coalesce(sum(name = 'agentstate_header'), 0) FROM sqlite_master WHERE name LIKE 'agentstate\_%' ESCAPE '\'`
	sqlSharedHeader = `SELECT application_id, schema_version FROM agentstate_header`
	sqlSharedSet    = `UPDATE agentstate_header SET application_id = ?, schema_version = ?`
	sqlSharedInsert = `INSERT INTO agentstate_header(application_id, schema_version) VALUES (?, ?)`
	// A file not opened as shared: does it carry the marker?
	sqlSharedMarked = `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'agentstate_header'`
	// The schema objects of a shared file that are ours.
	sqlSharedObjects = `SELECT type, name, coalesce(sql, '') FROM sqlite_master WHERE name LIKE 'agentstate\_%' ESCAPE '\'`
	// Our tables, for Info.
	sqlSharedTables = `SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'agentstate\_%' ESCAPE '\' ORDER BY name`
)

// sharedNames are the names the engine's SQL gives its objects: every
// table and index freshSchema and the migrations create, drop or rename to
// (TestSharedNamesAreTheSchema holds them to the schema), so that a
// migration in a shared file touches only objects of ours. Each becomes
// sharedPrefix+name in a shared file.
var sharedNames = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	scan := func(text string) {
		f := strings.Fields(text)
		for i := 0; i+1 < len(f); i++ {
			var kind string
			switch w := strings.ToUpper(f[i]); {
			case w == "TABLE" || w == "INDEX" || w == "TRIGGER" || w == "VIEW":
				kind = w
			case w == "RENAME" && strings.EqualFold(f[i+1], "TO"):
				i++
				kind = "TO"
			default:
				continue
			}
			j := i + 1
			for j < len(f) && (strings.EqualFold(f[j], "IF") || strings.EqualFold(f[j], "NOT") || strings.EqualFold(f[j], "EXISTS")) {
				j++
			}
			if j == len(f) || kind != "TO" && i > 0 && !isCreateOrDrop(f[i-1], f[max(i-2, 0)]) {
				continue
			}
			name, _, _ := strings.Cut(strings.Trim(f[j], `"`), "(")
			if name = strings.ToLower(strings.Trim(strings.TrimSuffix(name, ";"), `"`)); name != "" {
				names[name] = true
			}
		}
	}
	scan(freshSchema)
	for _, m := range migrations() {
		scan(m.sql)
	}
	return names
})

// isCreateOrDrop reports whether the words before TABLE, INDEX, ... begin
// a CREATE or DROP statement (CREATE UNIQUE INDEX: two words before).
func isCreateOrDrop(prev, prev2 string) bool {
	p := strings.ToUpper(prev)
	return p == "CREATE" || p == "DROP" || p == "UNIQUE" && strings.EqualFold(prev2, "CREATE")
}

// sharedStatements are the statements a shared file answers differently:
// the SQLite header's fields are the marker table's.
var sharedStatements = map[string]string{
	"PRAGMA application_id": `SELECT application_id FROM agentstate_header`,
	"PRAGMA user_version":   `SELECT schema_version FROM agentstate_header`,
	"SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name": sqlSharedTables,
	sqlSchemaObjects: sqlSharedObjects,
}

var sharedCache sync.Map // engine SQL -> shared file SQL

// sharedTranslate is a shared handle's conn translation hook.
func sharedTranslate(q string, args []any) (string, []any, error) {
	if v, ok := sharedCache.Load(q); ok {
		return v.(string), args, nil
	}
	s := sharedSQL(q)
	sharedCache.Store(q, s)
	return s, args, nil
}

// sharedSQL rewrites the engine's SQL text (one statement or a script) for
// a shared file: every identifier, bare or quoted, that names one of our
// objects gets sharedPrefix. String literals and comments are left as they
// are. The rename is consistent across a statement, and no column of ours
// is named like a table or index of ours (TestSharedNamesAreNotColumns),
// so the statement means what it meant.
func sharedSQL(q string) string {
	if s, ok := sharedStatements[q]; ok {
		return s
	}
	names := sharedNames()
	var b strings.Builder
	b.Grow(len(q) + 64)
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'':
			j := skipQuoted(q, i, '\'', '\'')
			b.WriteString(q[i:j])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j
		case c == '/' && i+1 < len(q) && q[i+1] == '*':
			j := strings.Index(q[i+2:], "*/")
			end := len(q)
			if j >= 0 {
				end = i + 2 + j + 2
			}
			b.WriteString(q[i:end])
			i = end
		case c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			j := skipQuoted(q, i, c, closer)
			inner := q[i+1 : max(i+1, j-1)]
			if j-1 > i && q[j-1] == closer && names[strings.ToLower(inner)] {
				b.WriteByte(c)
				b.WriteString(sharedPrefix)
				b.WriteString(inner)
				b.WriteByte(closer)
			} else {
				b.WriteString(q[i:j])
			}
			i = j
		case isWordByte(c) || c == '$':
			j := i
			for j < len(q) && (isWordByte(q[j]) || q[j] == '$') {
				j++
			}
			w := q[i:j]
			// A parameter (?1, :name, @name, $name) or a number is no name.
			prev := byte(0)
			if i > 0 {
				prev = q[i-1]
			}
			if prev != '?' && prev != ':' && prev != '@' && c != '$' && !(c >= '0' && c <= '9') && names[strings.ToLower(w)] {
				b.WriteString(sharedPrefix)
			}
			b.WriteString(w)
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// skipQuoted returns the index just past the quoted text that starts at
// q[i] (open) and ends with closer; a doubled closer inside stands for
// itself (except for brackets). An unterminated one runs to the end.
func skipQuoted(q string, i int, open, closer byte) int {
	j := i + 1
	for j < len(q) {
		if q[j] == closer {
			if open != '[' && j+1 < len(q) && q[j+1] == closer {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return len(q)
}

// readSharedState reads what a shared file says of us: our objects and the
// marker's fields, in the caller's transaction.
func readSharedState(c *conn) (s fileState, err error) {
	s.shared = true
	// The file's own header, not the marker's (c.d, past the translation).
	if err = c.d.Query("PRAGMA application_id", nil, func(r row) error { s.fileAppID = r.Int64(0); return nil }); err != nil {
		return s, err
	}
	var marked int64
	_, err = c.queryRow(sqlSharedState, nil, func(r row) error {
		s.objects, marked = r.Int64(0), r.Int64(1)
		return nil
	})
	if err != nil || marked == 0 {
		return s, err
	}
	s.marker = true
	_, err = c.queryRow(sqlSharedHeader, nil, func(r row) error {
		s.appID, s.version = r.Int64(0), r.Int64(1)
		return nil
	})
	return s, err
}

// sharedPrefixIf is sharedPrefix for a shared file, "" for another.
func sharedPrefixIf(shared bool) string {
	if shared {
		return sharedPrefix
	}
	return ""
}

// setShared makes c a connection of a shared file.
func (c *conn) setShared() {
	c.shared = true
	c.tr = sharedTranslate
}

// writeSharedHeader sets the marker's fields to version, in w's
// transaction, creating its row if it has none.
func writeSharedHeader(w *conn, version int) error {
	n, err := w.execN(sqlSharedSet, ApplicationID, version)
	if err != nil || n > 0 {
		return err
	}
	return w.exec(sqlSharedInsert, ApplicationID, version)
}
