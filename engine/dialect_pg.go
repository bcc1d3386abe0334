//go:build (!js && !wasip1) || (wasip1 && hostsqlite) || (js && hostpg)

package engine

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver"
)

// The PostgreSQL dialect: every statement the engine runs is SQLite text,
// translated here once and cached. Most of it translates mechanically
// (pgRewrite: parameters, INSERT OR IGNORE, INDEXED BY, json_each, IS NOT,
// CROSS JOIN ... ON); the statements that need more are written out in
// pgStatements, keyed by the engine's SQL constant.
//
// Where SQLite's SQL calls the engine's Go functions, PostgreSQL reads
// columns the SQLite schema does not have, written beside the msgpack
// bytes by the same statements (their arguments are derived in Go, from
// the bytes being stored):
//
//   - checkpoints.versions: the checkpoint's channel versions as a JSON
//     object, which the history walk reads (agentstate_version);
//   - checkpoints.metadata_j, threads.metadata_j, store_items.value_j: the
//     value in "typed JSON" (pgTypedJSON), which filters read in the
//     server (agentstate_match, defined by migrations_pg). A filter is
//     compiled in Go into a JSON list of conditions and bound as one
//     parameter: no caller text ever becomes SQL.

// pgStmt is one statement in PostgreSQL's dialect.
type pgStmt struct {
	sql string
	// args maps the engine's arguments to the statement's (derived
	// columns, compiled filters, dropped unused parameters); nil keeps them.
	args func([]any) ([]any, error)
}

var pgCache sync.Map // SQLite text -> *pgStmt

// pgTranslate is the PostgreSQL backend's conn translation hook.
func pgTranslate(q string, args []any) (string, []any, error) {
	v, ok := pgCache.Load(q)
	if !ok {
		v, _ = pgCache.LoadOrStore(q, pgStatement(q))
	}
	st := v.(*pgStmt)
	if st.args == nil {
		return st.sql, args, nil
	}
	a, err := st.args(args)
	return st.sql, a, err
}

func pgStatement(q string) *pgStmt {
	if st, ok := pgStatements[q]; ok {
		return st
	}
	return pgRewrite(q)
}

// pgStatements are the statements written out for PostgreSQL.
var pgStatements = map[string]*pgStmt{
	// The checkpoint family's upserts and derived columns (sql_checkpoints.go).
	sqlInsertCheckpoint: {
		sql:  sqlInsertCheckpointPG,
		args: deriveCheckpoint(5, 6),
	},
	exportTableByName("checkpoints").ins: {
		sql:  sqlCheckpointImportRowPG,
		args: deriveCheckpoint(5, 6),
	},
	sqlCopyCheckpoints: {sql: sqlCopyCheckpointsPG},
	sqlConvertMetadata: {
		sql:  sqlConvertMetadataPG,
		args: deriveTyped(0),
	},
	sqlInsertWriteReplace: {sql: sqlInsertWriteReplacePG},
	// The derived columns of store items (sql_store.go) and thread records
	// (sql_threads.go).
	sqlStorePut: {
		sql:  sqlStorePutPG,
		args: deriveTyped(2),
	},
	exportTableByName("store_items").ins: {
		sql:  sqlStoreImportRowPG,
		args: deriveTyped(2),
	},
	sqlThreadInsert: {
		sql:  sqlThreadInsertPG,
		args: deriveTyped(5),
	},
	exportTableByName("threads").ins: {
		sql:  sqlThreadImportRowPG,
		args: deriveTyped(5),
	},
	sqlThreadMeta: {
		sql:  sqlThreadMetaPG,
		args: deriveTyped(3),
	},
	// The event counter's upserts (sql_events.go).
	sqlEventSeq:        {sql: sqlEventSeqPG},
	sqlEventSeqPastMax: {sql: sqlEventSeqPastMaxPG},
	// Run status changes lock the row they read (sql_runs.go).
	sqlRunStatus: {sql: sqlRunStatusPG},
	sqlRunActive: {sql: sqlRunActivePG},
	// The history walk, a lookup by primary key each step (sql_checkpoints.go).
	sqlWalk:     {sql: sqlWalkPG},
	sqlWalkSeed: {sql: sqlWalkSeedPG},
	sqlBaseSeed: {sql: sqlBaseSeedPG},
	sqlHolds:    {sql: sqlHoldsPG},
	// The group's columns named (sql_tables.go).
	sqlLargestThreads: {sql: sqlLargestThreadsPG},
	// SQLite file maintenance that has no meaning on a server.
	"PRAGMA incremental_vacuum":       {sql: ""},
	"PRAGMA wal_checkpoint(TRUNCATE)": {sql: ""},
	"VACUUM":                          {sql: `VACUUM (FULL, ANALYZE) ` + strings.Join(pgTables, ", ")},
	// What the SQLite header and catalogue say, from agentstate_header and
	// PostgreSQL's catalogue of the current schema (Info, Verify).
	"PRAGMA application_id":              {sql: sqlHeaderAppIDPG},
	"PRAGMA user_version":                {sql: sqlHeaderVersionPG},
	"SELECT count(*) FROM sqlite_master": {sql: `SELECT count(*) FROM pg_catalog.pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'p', 'v', 'm', 'f')`},
	"PRAGMA page_size":                   {sql: `SELECT current_setting('block_size')::bigint`},
	"PRAGMA page_count": {sql: `SELECT (coalesce(sum(pg_total_relation_size(oid)), 0) / current_setting('block_size')::bigint)::bigint
		FROM pg_catalog.pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r'`},
	"PRAGMA freelist_count": {sql: `SELECT 0`},
	"SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' ORDER BY name": {
		sql: `SELECT relname::text FROM pg_catalog.pg_class WHERE relnamespace = current_schema()::regnamespace AND relkind = 'r' ORDER BY 1`},
}

// pgTables are the tables migrations_pg creates.
var pgTables = []string{"agentstate_header", "schema_history", "meta", "checkpoints", "blobs", "writes",
	"store_items", "runs", "event_seqs", "events", "threads", "thread_modes", "store_vectors"}

var (
	pgParamRE    = regexp.MustCompile(`\?(\d*)|[:@$]([A-Za-z_][A-Za-z0-9_]*)`)
	pgIndexedBy  = regexp.MustCompile(`\s+INDEXED BY \w+`)
	pgVersionFn  = regexp.MustCompile(`agentstate_version\(((?:\w+\.)?)checkpoint, (\$\d+)\)`)
	pgMatchFn    = regexp.MustCompile(`agentstate_(meta|store|thread)_match\((\w+), \$(\d+)\)`)
	pgIsNot      = regexp.MustCompile(`\bIS NOT ('[^']*'|\$\d+)`)
	pgJSONEachAs = regexp.MustCompile(`json_each\((\$\d+)\) (\w+)\b`)
	pgCrossJoin  = regexp.MustCompile(`(?s)CROSS JOIN (\w+) (\w+)\s+ON (.*?)(\s+(?:ORDER BY|WHERE|GROUP BY)\b|\z)`)
	pgJSONEach   = regexp.MustCompile(`json_each\((\$\d+)\)`)
	pgWhere1     = regexp.MustCompile(`\bWHERE 1\b`)
	pgLimit      = regexp.MustCompile(`\bLIMIT (\$\d+)`)
	pgCountFrom  = regexp.MustCompile(`(?s)^SELECT count\(\*\) FROM \((.*)\)$`)
	pgDollar     = regexp.MustCompile(`\$(\d+)`)
	pgDollarCast = regexp.MustCompile(`\$(\d+)::(\w+)`)
	pgBlobLit    = regexp.MustCompile(`\bx'([0-9a-fA-F]*)'`)
)

// pgRewrite translates SQLite text mechanically.
func pgRewrite(q string) *pgStmt {
	q, maxN := pgNumberParams(q)
	var transforms []func([]any) ([]any, error)
	if strings.HasPrefix(q, "INSERT OR IGNORE INTO") {
		q = "INSERT INTO" + strings.TrimPrefix(q, "INSERT OR IGNORE INTO") + " ON CONFLICT DO NOTHING"
	}
	q = pgIndexedBy.ReplaceAllString(q, "")
	// SQLite's CROSS JOIN ... ON keeps the left side as the outer loop (one
	// index search per key of a list); PostgreSQL's planner may prefer to
	// scan the right side whole. A lateral subquery, fenced by OFFSET 0,
	// keeps the search per key.
	q = pgCrossJoin.ReplaceAllString(q, "CROSS JOIN LATERAL (SELECT * FROM $1 $2 WHERE $3 OFFSET 0) $2$4")
	q = pgVersionFn.ReplaceAllString(q, "${1}versions ->> $2")
	q = pgMatchFn.ReplaceAllStringFunc(q, func(m string) string {
		sm := pgMatchFn.FindStringSubmatch(m)
		transforms = append(transforms, pgFilterArg(sm[1], sm[3]))
		return "agentstate_match(" + sm[2] + "_j, $" + sm[3] + "::jsonb)"
	})
	q = pgIsNot.ReplaceAllString(q, "IS DISTINCT FROM $1")
	q = pgJSONEachAs.ReplaceAllStringFunc(q, func(m string) string {
		sm := pgJSONEachAs.FindStringSubmatch(m)
		return "(SELECT value, ordinality - 1 AS key FROM jsonb_array_elements(" + sm[1] + "::jsonb) WITH ORDINALITY) " + sm[2]
	})
	// Text of the list compares byte by byte, as every text column does.
	q = pgJSONEach.ReplaceAllString(q, `(SELECT v COLLATE "C" AS value FROM jsonb_array_elements_text($1::jsonb) v) AS json_each`)
	q = pgWhere1.ReplaceAllString(q, "WHERE true")
	// SQLite reads a negative LIMIT as none.
	q = pgLimit.ReplaceAllString(q, "LIMIT nullif($1::bigint, -1)")
	if sm := pgCountFrom.FindStringSubmatch(q); sm != nil {
		q = "SELECT count(*) FROM (" + sm[1] + ") AS counted"
	}
	q = pgBlobLit.ReplaceAllString(q, `'\x$1'::bytea`)
	q, used := pgTypeNullTests(q)
	if len(used) < maxN {
		var drop func([]any) ([]any, error)
		q, drop = pgDropUnused(q, used, maxN)
		transforms = append(transforms, drop)
	}
	st := &pgStmt{sql: q}
	if len(transforms) > 0 {
		st.args = func(args []any) ([]any, error) {
			var err error
			for _, f := range transforms {
				if args, err = f(args); err != nil {
					return nil, err
				}
			}
			return args, nil
		}
	}
	return st
}

// pgNumberParams turns SQLite's parameters into PostgreSQL's: ?NNN keeps
// its number, ? takes the next, a named one the number of its first
// appearance (SQLite's rules). maxN is the highest number given.
func pgNumberParams(q string) (out string, maxN int) {
	names := map[string]int{}
	out = pgParamRE.ReplaceAllStringFunc(q, func(m string) string {
		var n int
		switch {
		case m == "?":
			maxN++
			n = maxN
		case m[0] == '?':
			n, _ = strconv.Atoi(m[1:])
		default:
			var ok bool
			if n, ok = names[m[1:]]; !ok {
				maxN++
				n = maxN
				names[m[1:]] = n
			}
		}
		maxN = max(maxN, n)
		return "$" + strconv.Itoa(n)
	})
	return out, maxN
}

// pgFilterArg replaces the filter argument number param (SQLite's
// agentstate_match(kind, ...) takes the engine's encoded filter) by the
// conditions the server's agentstate_match reads.
func pgFilterArg(kind, param string) func([]any) ([]any, error) {
	n, _ := strconv.Atoi(param)
	compile := map[string]func([]byte) ([]byte, error){"meta": pgListFilter, "store": pgStoreFilter, "thread": pgThreadFilter}[kind]
	return func(args []any) ([]any, error) {
		if n > len(args) {
			return args, nil
		}
		b, ok := args[n-1].([]byte)
		if !ok {
			return args, nil
		}
		conds, err := compile(b)
		if err != nil {
			return nil, err
		}
		out := slices.Clone(args)
		out[n-1] = conds
		return out, nil
	}
}

// pgTypeNullTests types the parameters of "$n IS [NOT] NULL": PostgreSQL
// infers a parameter's type from its first use, and such a test says
// nothing, so it is cast to the type another use names ($1::jsonb), text
// otherwise (every such parameter of the engine is text or JSON). used
// holds every parameter number the text names.
func pgTypeNullTests(q string) (string, map[int]bool) {
	used := map[int]bool{}
	casts := map[int]string{}
	for _, sm := range pgDollarCast.FindAllStringSubmatch(q, -1) {
		n, _ := strconv.Atoi(sm[1])
		casts[n] = sm[2]
	}
	var b strings.Builder
	last := 0
	for _, loc := range pgDollar.FindAllStringSubmatchIndex(q, -1) {
		n, _ := strconv.Atoi(q[loc[2]:loc[3]])
		used[n] = true
		b.WriteString(q[last:loc[1]])
		last = loc[1]
		if rest := q[loc[1]:]; strings.HasPrefix(rest, " IS NULL") || strings.HasPrefix(rest, " IS NOT NULL") {
			typ := casts[n]
			if typ == "" {
				typ = "text"
			}
			b.WriteString("::" + typ)
		}
	}
	b.WriteString(q[last:])
	return b.String(), used
}

// pgDropUnused renumbers the parameters densely and drops the arguments of
// numbers SQLite binds but the text never names (a statement shape that
// ignores some of a shared argument list): PostgreSQL cannot type them.
func pgDropUnused(q string, used map[int]bool, maxN int) (string, func([]any) ([]any, error)) {
	keep := make([]int, 0, len(used))
	renum := map[int]int{}
	for n := 1; n <= maxN; n++ {
		if used[n] {
			keep = append(keep, n-1)
			renum[n] = len(keep)
		}
	}
	q = pgDollar.ReplaceAllStringFunc(q, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		return "$" + strconv.Itoa(renum[n])
	})
	return q, func(args []any) ([]any, error) {
		out := make([]any, 0, len(keep))
		for _, i := range keep {
			if i < len(args) {
				out = append(out, args[i])
			}
		}
		return out, nil
	}
}

// deriveCheckpoint appends the versions and typed metadata of the
// checkpoint bytes at args[cp] and the metadata bytes at args[md].
func deriveCheckpoint(cp, md int) func([]any) ([]any, error) {
	return func(args []any) ([]any, error) {
		b, _ := args[cp].([]byte)
		versions, err := pgVersionsJSON(b)
		if err != nil {
			return nil, err
		}
		mb, _ := args[md].([]byte)
		return append(slices.Clip(args), versions, pgTypedJSON(mb)), nil
	}
}

// deriveTyped appends the typed JSON of the msgpack value at args[i].
func deriveTyped(i int) func([]any) ([]any, error) {
	return func(args []any) ([]any, error) {
		b, _ := args[i].([]byte)
		return append(slices.Clip(args), pgTypedJSON(b)), nil
	}
}

// pgVersionsJSON is the channel -> version map of a stored checkpoint, as
// a JSON object: what the history walk reads (versions ->> channel). Bytes
// that do not decode give an empty map, as agentstate_version gives NULL.
func pgVersionsJSON(stored []byte) (any, error) {
	var sc struct {
		ChannelVersions map[string]string `msgpack:"cv"`
	}
	if codec.Unmarshal(stored, &sc) != nil || len(sc.ChannelVersions) == 0 {
		return "{}", nil
	}
	for ch, v := range sc.ChannelVersions {
		if !pgSafeText(ch) || !pgSafeText(v) {
			return nil, &driver.Error{Kind: driver.ErrValue, Err: fmt.Errorf("channel %q version %q: PostgreSQL text cannot hold a NUL byte or invalid UTF-8", ch, v)}
		}
	}
	b, err := json.Marshal(sc.ChannelVersions)
	return string(b), err
}

// pgSafeText reports whether s can be PostgreSQL text (and a JSON string
// of jsonb): valid UTF-8 without NUL.
func pgSafeText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// pgTypedJSON is a stored msgpack value (codec envelope) in typed JSON, or
// nil (NULL) when it does not decode, so that filters match nothing, as the
// SQLite functions do.
//
// Typed JSON keeps the distinctions filters make that JSON cannot: an
// integer is a JSON number; a float is {"$f": number}, or {"$f": "NaN" |
// "Infinity" | "-Infinity"}; a string is a JSON string, or {"$s": hex} when
// it holds a NUL or invalid UTF-8 (jsonb cannot); a list is {"$a": [...]}
// (so that a path never indexes into a list, as the Go filters never do);
// any other value is {"$x": hex of its msgpack}. A map is an object; its
// keys starting with "$" get one more "$", and keys jsonb cannot hold
// become "$h" + hex, so a map never looks like a tag and filter paths
// (letters, digits, "_" and "-") reach exactly the keys they name.
func pgTypedJSON(stored []byte) any {
	if stored == nil {
		return nil
	}
	var v any
	if codec.Unmarshal(stored, &v) != nil {
		return nil
	}
	return string(appendTyped(nil, v))
}

func appendTyped(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		return strconv.AppendBool(b, x)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case float64:
		return appendFloat(b, x)
	case float32:
		return appendFloat(b, float64(x))
	case string:
		return appendTypedString(b, x)
	case []byte:
		return appendTypedString(b, string(x))
	case []any:
		b = append(b, `{"$a":[`...)
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendTyped(b, e)
		}
		return append(b, "]}"...)
	case map[string]any:
		b = append(b, '{')
		for i, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range x {
				if !yield(k) {
					return
				}
			}
		}) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, typedKey(k))
			b = append(b, ':')
			b = appendTyped(b, x[k])
		}
		return append(b, '}')
	case time.Time:
		return append(appendJSONString(append(b, `{"$x":`...), x.UTC().Format(time.RFC3339Nano)), '}')
	}
	raw, err := codec.Marshal(v)
	if err != nil {
		raw = []byte(fmt.Sprintf("%T %v", v, v))
	}
	b = append(b, `{"$x":"`...)
	b = hex.AppendEncode(b, raw)
	return append(b, `"}`...)
}

func typedKey(k string) string {
	switch {
	case !pgSafeText(k):
		return "$h" + hex.EncodeToString([]byte(k))
	case strings.HasPrefix(k, "$"):
		return "$" + k
	}
	return k
}

func appendFloat(b []byte, f float64) []byte {
	b = append(b, `{"$f":`...)
	switch {
	case math.IsNaN(f):
		b = append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		b = append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		b = append(b, `"-Infinity"`...)
	default:
		b = strconv.AppendFloat(b, f, 'g', -1, 64)
	}
	return append(b, '}')
}

func appendTypedString(b []byte, s string) []byte {
	if pgSafeText(s) {
		return appendJSONString(b, s)
	}
	b = append(b, `{"$s":"`...)
	b = hex.AppendEncode(b, []byte(s))
	return append(b, `"}`...)
}

func appendJSONString(b []byte, s string) []byte {
	j, _ := json.Marshal(s)
	return append(b, j...)
}

// pgCond is one compiled filter condition as agentstate_match reads it.
type pgCond struct {
	Path   string          `json:"p"` // dotted: segments never hold a dot
	Op     string          `json:"o"` // eq ne gt ge lt le map
	Kind   string          `json:"k"` // of the operand: null bool str int float cont other
	Value  json.RawMessage `json:"v,omitempty"`
	Hex    string          `json:"h"` // str: the bytes
	Float  string          `json:"f"` // float: the value as float8 text
	Strict bool            `json:"s"` // an integer never equals a float
}

var pgOps = map[string]string{opEq: "eq", opNe: "ne", opGt: "gt", opGte: "ge", opLt: "lt", opLte: "le", opIsMap: "map"}

// pgConds encodes a compiled filter for agentstate_match.
func pgConds(rf *recFilter) ([]byte, error) {
	out := []pgCond{}
	if rf != nil {
		for _, c := range rf.conds {
			pc := pgCond{Path: strings.Join(c.path, "."), Op: pgOps[c.op], Strict: rf.strict}
			switch v := c.val.(type) {
			case nil:
				pc.Kind = "null"
			case bool:
				pc.Kind, pc.Value = "bool", json.RawMessage(strconv.FormatBool(v))
			case string:
				pc.Kind, pc.Hex = "str", hex.EncodeToString([]byte(v))
			case []byte:
				pc.Kind, pc.Hex = "str", hex.EncodeToString(v)
			case int64, int, uint64:
				pc.Kind, pc.Value = "int", json.RawMessage(fmt.Sprint(v))
			case float64, float32:
				f, _ := v.(float64)
				if f32, ok := v.(float32); ok {
					f = float64(f32)
				}
				pc.Kind = "float"
				switch {
				case math.IsInf(f, 1):
					pc.Float = "Infinity"
				case math.IsInf(f, -1):
					pc.Float = "-Infinity"
				case math.IsNaN(f):
					pc.Float = "NaN"
				default:
					pc.Float = strconv.FormatFloat(f, 'g', -1, 64)
				}
			case []any, map[string]any:
				pc.Kind, pc.Value = "cont", appendTyped(nil, v)
			default:
				pc.Kind, pc.Value = "other", appendTyped(nil, v)
			}
			out = append(out, pc)
		}
	}
	return json.Marshal(out)
}

// pgStoreFilter compiles a store filter given as agentstate_store_match's
// argument (the caller's filter in codec bytes).
func pgStoreFilter(b []byte) ([]byte, error) { return pgMapFilter(b, compileStoreFilter) }

// pgThreadFilter compiles a thread metadata filter the same way.
func pgThreadFilter(b []byte) ([]byte, error) { return pgMapFilter(b, compileMetadataFilter) }

func pgMapFilter(b []byte, compile func(map[string]any) (*recFilter, error)) ([]byte, error) {
	var m map[string]any
	if err := codec.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("agentstate: bad filter: %w", err)
	}
	rf, err := compile(m)
	if err != nil {
		return nil, err
	}
	return pgConds(rf)
}

// pgListFilter compiles List's metadata filter (encodeFilter's terms):
// equality at each path, numbers by value.
func pgListFilter(b []byte) ([]byte, error) {
	var terms []filterTerm
	if err := codec.Unmarshal(b, &terms); err != nil {
		return nil, fmt.Errorf("agentstate: bad filter: %w", err)
	}
	rf := &recFilter{}
	for _, t := range terms {
		rf.conds = append(rf.conds, recCond{path: t.Path, op: opEq, val: t.Value})
	}
	return pgConds(rf)
}
