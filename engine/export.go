package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/agentstate/agentstate/channels"
	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
	"github.com/agentstate/agentstate/engine/internal/driver"
)

// The export format (JSON lines). The first line is a header:
//
//	{"table":"agentstate","format":1,"schema_version":5,"mode":"delta","snapshot_every":10}
//
// (with "thread_id" when the export is of one thread); then one line per row
// of every surface, tables in a fixed order and rows in primary-key order;
// then a trailer {"table":"end","rows":N}, so that a truncated dump is
// refused. A row line holds "table" and the row's columns by name. A NULL
// column is left out. Columns that hold the engine's own msgpack are
// decoded to JSON (see codec's json.go for the lossless mapping); "zstd" lists
// the columns that were stored compressed ("deflate" those compressed by
// builds before zstd). A channel value or write holds
// "value" (decoded JSON) when its type is the engine's, and "data" (base64
// of the bytes) when it is a caller's (LangGraph serde output, say), next to
// its "type". The same file exported, imported and exported again gives the
// same bytes.

// ExportFormat is the version of the export format this build writes and reads.
const ExportFormat = 1

// oldestExportSchema is the oldest schema version whose exports this build
// imports: the later ones only added columns a dump may leave out (a row of
// blobs without "enc" and "base" is a whole value).
const oldestExportSchema = 4

type colKind int

const (
	colText     colKind = iota // TEXT NOT NULL
	colTextNull                // TEXT, may be NULL
	colInt                     // INTEGER NOT NULL
	colIntNull                 // INTEGER, may be NULL
	colMsgpack                 // BLOB of codec's envelope, may be NULL
	colTyped                   // BLOB whose type tag is the row's "type" column
	colEnc                     // INTEGER NOT NULL DEFAULT 0: left out when 0, so a whole value's line is as before it existed
	// colPack is a pending write's enc: how the engine stored its value
	// (packed in a codec envelope when that saved). Never exported: the
	// value is written unpacked, and an import packs it again.
	colPack
	// colBytes is a BLOB NOT NULL of raw bytes, exported as base64.
	colBytes
)

type exportCol struct {
	name string
	kind colKind
}

type exportTable struct {
	name string
	cols []exportCol
	// threadCol names the column that filters an export of one thread
	// ("" for tables that belong to no thread).
	threadCol string
	orderBy   string
	sel, ins  string // built from the columns (constants), never from input
}

// exportTables returns the exported tables in the order a dump lists them;
// each one's columns are beside its statements, in its sql_<table>.go.
// They are built on first use, off the start-up path of every open.
var exportTables = sync.OnceValue(func() []exportTable {
	return buildExportTables([]exportTable{
		exportThreadModes, exportCheckpoints, exportBlobs, exportWrites, exportThreads, exportRuns, exportEventSeqs, exportEvents, exportStoreItems, exportStoreVectors,
	})
})

func buildExportTables(ts []exportTable) []exportTable {
	for i := range ts {
		t := &ts[i]
		names := make([]string, len(t.cols))
		marks := make([]string, len(t.cols))
		for j, c := range t.cols {
			names[j] = c.name
			marks[j] = "?"
		}
		// A table that belongs to no thread is exported only whole.
		where := " WHERE ?1 = ''"
		if t.threadCol != "" {
			where = " WHERE ?1 = '' OR " + t.threadCol + " = ?1"
		}
		t.sel = "SELECT " + strings.Join(names, ", ") + " FROM " + t.name + where + " ORDER BY " + t.orderBy
		t.ins = "INSERT INTO " + t.name + "(" + strings.Join(names, ", ") + ") VALUES (" + strings.Join(marks, ", ") + ")"
	}
	return ts
}

func exportTableByName(name string) *exportTable {
	ts := exportTables()
	for i := range ts {
		if ts[i].name == name {
			return &ts[i]
		}
	}
	return nil
}

// exportHeader is the first line of an export.
type exportHeader struct {
	Table         string        `json:"table"`
	Format        int           `json:"format"`
	SchemaVersion int           `json:"schema_version"`
	Mode          channels.Mode `json:"mode"`
	SnapshotEvery int           `json:"snapshot_every"`
	ThreadID      string        `json:"thread_id,omitempty"`
}

type exportTrailer struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
}

// Export writes every surface of the file (or of one thread) to w as JSON
// lines (format above), from one consistent read snapshot. Its output is
// deterministic: the same content always gives the same bytes. A stored
// value of the engine's type that does not decode fails the export with an
// error matching ErrCorrupt that names the row.
func (db *DB) Export(ctx context.Context, w io.Writer, o admin.ExportOptions) (admin.ExportReport, error) {
	rep := admin.ExportReport{Rows: map[string]int64{}}
	bw := bufio.NewWriterSize(w, 1<<16)
	err := db.read(ctx, func(c *conn) error {
		var total int64
		for _, t := range exportTables() {
			n, err := c.queryInt64("SELECT count(*) FROM ("+t.sel+")", o.ThreadID)
			if err != nil {
				return err
			}
			total += n
		}
		h := exportHeader{Table: "agentstate", Format: ExportFormat, SchemaVersion: SchemaVersion,
			Mode: db.opts.Mode, SnapshotEvery: db.opts.SnapshotEvery, ThreadID: o.ThreadID}
		if err := writeJSONLine(bw, h); err != nil {
			return err
		}
		var line bytes.Buffer
		for _, t := range exportTables() {
			err := c.query(t.sel, []any{o.ThreadID}, func(st row) error {
				line.Reset()
				if err := exportRow(ctx, &line, &t, st); err != nil {
					return err
				}
				line.WriteByte('\n')
				if _, err := bw.Write(line.Bytes()); err != nil {
					return err
				}
				rep.Rows[t.name]++
				rep.Total++
				if o.Progress != nil && rep.Total%500 == 0 {
					o.Progress(rep.Total, total)
				}
				return ctx.Err()
			})
			if err != nil {
				return err
			}
		}
		if o.Progress != nil {
			o.Progress(rep.Total, total)
		}
		return writeJSONLine(bw, exportTrailer{Table: "end", Rows: rep.Total})
	})
	if err != nil {
		return rep, err
	}
	return rep, bw.Flush()
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// compressionKeys name, in a row line, the lists of columns that were
// stored compressed, by envelope format. A checkpoint row's S2 envelope
// (packCheckpoint) is not among them: it is how every checkpoint row is
// stored when it saves, so an import applies it again.
var compressionKeys = []struct {
	key    string
	format byte
}{{"zstd", codec.FormatV1Zstd}, {"deflate", codec.FormatV1Deflate}}

// exportRow writes one row as a JSON object. ctx stops the transcoding of
// a large value part way.
func exportRow(ctx context.Context, dst *bytes.Buffer, t *exportTable, st row) error {
	dst.WriteString(`{"table":`)
	codec.WriteJSONString(dst, t.name)
	compressed := map[byte][]string{}
	typ := ""
	enc := int64(encPlain)
	packed := false
	for i, col := range t.cols {
		if col.kind == colPack {
			packed = st.Int64(i) == encPacked
			continue
		}
		if st.Null(i) || col.kind == colEnc && st.Int64(i) == encPlain {
			continue
		}
		// A value of the engine's type decodes to JSON; a caller's value,
		// a packed one or a delta keeps its bytes.
		decoded := typ == codec.TypeMsgpack && enc == encPlain
		key := col.name
		if col.kind == colTyped && !decoded {
			key = "data"
		} else if col.kind == colTyped {
			key = "value"
		}
		dst.WriteByte(',')
		codec.WriteJSONString(dst, key)
		dst.WriteByte(':')
		switch col.kind {
		case colText, colTextNull:
			s := st.Text(i)
			if col.name == "type" {
				typ = s
			}
			codec.WriteJSONString(dst, s)
		case colInt, colIntNull:
			dst.WriteString(strconv.FormatInt(st.Int64(i), 10))
		case colBytes:
			dst.WriteByte('"')
			dst.WriteString(base64.StdEncoding.EncodeToString(st.Blob(i)))
			dst.WriteByte('"')
		case colEnc:
			enc = st.Int64(i)
			dst.WriteString(strconv.FormatInt(enc, 10))
		case colMsgpack, colTyped:
			data := st.Blob(i)
			if packed {
				body, _, err := codec.Body(data)
				if err != nil {
					return fmt.Errorf("%w: %s row %s: column %s: %w", undecodable(err), t.name, rowKey(t, st), col.name, err)
				}
				data = body
			}
			if col.kind == colTyped && !decoded {
				dst.WriteByte('"')
				dst.WriteString(base64.StdEncoding.EncodeToString(data))
				dst.WriteByte('"')
				continue
			}
			format, err := codec.EnvelopeToJSON(ctx, dst, data)
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err != nil {
				return fmt.Errorf("%w: %s row %s: column %s: %w", undecodable(err), t.name, rowKey(t, st), col.name, err)
			}
			if format != codec.FormatV1 {
				compressed[format] = append(compressed[format], col.name)
			}
		}
	}
	for _, c := range compressionKeys {
		if cols := compressed[c.format]; len(cols) > 0 {
			dst.WriteString(`,"` + c.key + `":[`)
			for i, d := range cols {
				if i > 0 {
					dst.WriteByte(',')
				}
				codec.WriteJSONString(dst, d)
			}
			dst.WriteByte(']')
		}
	}
	dst.WriteByte('}')
	return nil
}

// rowKey names a row by its text key columns, for error messages.
func rowKey(t *exportTable, st row) string {
	var parts []string
	for i, col := range t.cols {
		if col.kind == colText && len(parts) < 4 {
			parts = append(parts, fmt.Sprintf("%s=%q", col.name, st.Text(i)))
		}
	}
	return strings.Join(parts, " ")
}

// ErrBadExport: an import's input is not a well-formed export.
var ErrBadExport = errors.New("agentstate: malformed export")

// Import reads an export written by Export and inserts every row in one
// transaction, verified before it commits: everything, or nothing. Into a
// file that holds data it adds whole threads only; a store item or run that
// exists is ErrConflict (docs/cli.md, "Importing into a file that holds
// data", gives every rule). A malformed or truncated input is ErrBadExport,
// one of another channel mode ErrModeMismatch. It holds one line's values at
// a time: a line past MaxImportLineBytes is ErrBadExport and ErrTooLarge.
func (db *DB) Import(ctx context.Context, r io.Reader, o admin.ImportOptions) (admin.ImportReport, error) {
	lines := newImportLines(ctx, r)
	h, err := readExportHeader(lines)
	if err != nil {
		return admin.ImportReport{}, err
	}
	return db.importRows(ctx, lines, h, o)
}

// ImportFile imports an export into the file at path, creating it if
// needed in the export's channel mode and K (an existing file must have
// them: ErrModeMismatch otherwise). opts may be nil; its Mode and
// SnapshotEvery are replaced by the export's.
func ImportFile(ctx context.Context, path string, r io.Reader, opts *Options, o admin.ImportOptions) (admin.ImportReport, error) {
	lines := newImportLines(ctx, r)
	h, err := readExportHeader(lines)
	if err != nil {
		return admin.ImportReport{}, err
	}
	op := DefaultOptions()
	if opts != nil {
		op = *opts
	}
	op.Mode, op.SnapshotEvery = h.Mode, h.SnapshotEvery
	db, err := Open(ctx, path, &op)
	if mm := (*ModeMismatchError)(nil); errors.As(err, &mm) && mm.Op == "open" && !mm.Race {
		// The file's mode is not the export's: say so in terms of the
		// import, not of Open's options.
		return admin.ImportReport{}, importMismatch(mm.Path, mm.Mode, mm.Every, h)
	}
	if err != nil {
		return admin.ImportReport{}, err
	}
	rep, err := db.importRows(ctx, lines, h, o)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	return rep, err
}

func importMismatch(path string, mode channels.Mode, every int, h exportHeader) error {
	return modeMismatch("import", path, "", mode, every, h.Mode, h.SnapshotEvery)
}

func newImportLines(ctx context.Context, r io.Reader) *codec.JSONLines {
	return codec.NewJSONLines(ctx, r, MaxImportLineBytes, MaxRowBytes)
}

// importLineError types an error of the line reader: JSON that is not an
// export's is ErrBadExport, and a line past the bounds ErrTooLarge too; a
// read error or the context's passes through.
func importLineError(err error) error {
	switch {
	case errors.Is(err, codec.ErrTooLarge):
		return fmt.Errorf("%w: %w: %v", ErrBadExport, ErrTooLarge, err)
	case errors.Is(err, codec.ErrJSON), errors.Is(err, codec.ErrTooDeep), errors.Is(err, codec.ErrCorrupt):
		return fmt.Errorf("%w: %v", ErrBadExport, err)
	}
	return err
}

func readExportHeader(lines *codec.JSONLines) (exportHeader, error) {
	body, err := lines.Next()
	if err == io.EOF {
		return exportHeader{}, fmt.Errorf("%w: empty input", ErrBadExport)
	}
	if err != nil {
		return exportHeader{}, importLineError(err)
	}
	var h exportHeader
	var js bytes.Buffer
	if err := codec.MsgpackToJSON(context.Background(), &js, body); err != nil || json.Unmarshal(js.Bytes(), &h) != nil || h.Table != "agentstate" {
		return exportHeader{}, fmt.Errorf("%w: line 1 is not an agentstate export header", ErrBadExport)
	}
	if h.Format != ExportFormat {
		return exportHeader{}, fmt.Errorf("%w: export format %d, this build reads %d", ErrBadExport, h.Format, ExportFormat)
	}
	if h.SchemaVersion < oldestExportSchema || h.SchemaVersion > SchemaVersion {
		return exportHeader{}, fmt.Errorf("%w: the export was made at schema version %d, this build reads exports of versions %d to %d; export and import with the same version", ErrBadExport, h.SchemaVersion, oldestExportSchema, SchemaVersion)
	}
	if h.Mode != channels.ModeFull && h.Mode != channels.ModeDelta || h.SnapshotEvery < 1 {
		return exportHeader{}, fmt.Errorf("%w: header mode %q with K %d", ErrBadExport, h.Mode, h.SnapshotEvery)
	}
	return h, nil
}

func (db *DB) importRows(ctx context.Context, lines *codec.JSONLines, h exportHeader, o admin.ImportOptions) (admin.ImportReport, error) {
	if h.Mode != db.opts.Mode || h.Mode == channels.ModeDelta && h.SnapshotEvery != db.opts.SnapshotEvery {
		return admin.ImportReport{}, importMismatch(db.path, db.opts.Mode, db.opts.SnapshotEvery, h)
	}
	rep := admin.ImportReport{Rows: map[string]int64{}, Mode: h.Mode, ThreadID: h.ThreadID}
	threads := map[string]bool{}
	err := db.write(ctx, func(c *conn) error {
		if err := db.checkFileModeNow(c); err != nil {
			return err
		}
		rules := newImportRules(db, h, o.User)
		if err := keepInsertedLeases(c); err != nil {
			return err
		}
		ended := false
		for {
			body, err := lines.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return importLineError(err)
			}
			lineNo := lines.Line()
			if ended {
				return fmt.Errorf("%w: line %d follows the trailer", ErrBadExport, lineNo)
			}
			fields, err := lineFields(body)
			if err != nil {
				return fmt.Errorf("%w: line %d: %v", ErrBadExport, lineNo, err)
			}
			table, ok := mpString(fields["table"])
			if !ok {
				return fmt.Errorf("%w: line %d has no table", ErrBadExport, lineNo)
			}
			if table == "end" {
				rows, ok := mpInt64(fields["rows"])
				if !ok || len(fields) != 2 || rows != rep.Total {
					return fmt.Errorf("%w: line %d: the trailer counts %d rows, %d were read", ErrBadExport, lineNo, rows, rep.Total)
				}
				ended = true
				continue
			}
			t := exportTableByName(table)
			if t == nil {
				return fmt.Errorf("%w: line %d: unknown table %q", ErrBadExport, lineNo, table)
			}
			args, thread, err := importArgs(t, fields, db.compression())
			if err != nil {
				return fmt.Errorf("%w: line %d (%s): %w", ErrBadExport, lineNo, table, err)
			}
			if err := rules.row(c, t, args, thread); err != nil {
				return fmt.Errorf("line %d (%s): %w", lineNo, table, err)
			}
			if err := c.exec(t.ins, args...); err != nil {
				if errors.Is(err, driver.ErrConstraint) {
					return fmt.Errorf("%w: line %d (%s): %v", ErrConflict, lineNo, table, err)
				}
				return fmt.Errorf("line %d (%s): %w", lineNo, table, err)
			}
			if thread != "" && !threads[thread] {
				if err := c.lock(thread); err != nil {
					return err
				}
				threads[thread] = true
			}
			rep.Rows[table]++
			rep.Total++
			if o.Progress != nil && rep.Total%500 == 0 {
				o.Progress(lineNo)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if !ended {
			return fmt.Errorf("%w: no trailer after line %d: the export is truncated", ErrBadExport, lines.Line())
		}
		return rules.finish(c)
	})
	for th := range threads {
		db.purge(th)
	}
	if err != nil {
		return admin.ImportReport{}, err
	}
	return rep, nil
}
