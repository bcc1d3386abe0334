//go:build !wasip1 && !js

package langgraph

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	"github.com/jackc/pgx/v5/pgconn"
)

// PostgresSaver databases (langgraph-checkpoint-postgres 3.x):
//
//	checkpoints(thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id,
//	            type, checkpoint jsonb, metadata jsonb)
//	checkpoint_blobs(thread_id, checkpoint_ns, channel, version, type, blob bytea)
//	checkpoint_writes(thread_id, checkpoint_ns, checkpoint_id, task_id, idx,
//	                  channel, type, blob bytea, task_path)
//	checkpoint_migrations(v)
//
// The checkpoint's JSON keeps inline only the channel values that are
// None, str, int, float or bool (a DeltaChannel snapshot leaves the marker
// true); every other value is a row of checkpoint_blobs at the channel's
// version, shared by every checkpoint with that version. Reading a
// checkpoint joins its channel_versions with the blobs, which override the
// inline values, as the saver's get_tuple does. The whole import reads one
// snapshot of the database (a read-only, repeatable-read transaction).
type pgSource struct {
	url  string // without the password
	conn *pgconn.PgConn
}

// pgTables are the columns the reader needs, with their types.
var pgTables = map[string]map[string]string{
	"checkpoints": {"thread_id": "text", "checkpoint_ns": "text", "checkpoint_id": "text", "parent_checkpoint_id": "text",
		"checkpoint": "jsonb", "metadata": "jsonb"},
	"checkpoint_blobs": {"thread_id": "text", "checkpoint_ns": "text", "channel": "text", "version": "text", "type": "text", "blob": "bytea"},
	"checkpoint_writes": {"thread_id": "text", "checkpoint_ns": "text", "checkpoint_id": "text", "task_id": "text", "idx": "integer",
		"channel": "text", "type": "text", "blob": "bytea", "task_path": "text"},
	"checkpoint_migrations": {"v": "integer"},
}

func openPostgres(ctx context.Context, src string) (source, error) {
	shown := src
	if u, err := url.Parse(src); err == nil {
		shown = u.Redacted()
	}
	conn, err := pgconn.Connect(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, shown, err)
	}
	s := &pgSource{url: shown, conn: conn}
	if _, err := conn.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY`).ReadAll(); err != nil {
		s.close()
		return nil, fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, shown, err)
	}
	if err := s.checkLayout(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// query runs q with text parameters and calls fn with each row's columns
// in binary format (text and bytea as their bytes, integers big-endian,
// NULL as nil), valid only during the call.
func (s *pgSource) query(ctx context.Context, q string, args []string, fn func(cols [][]byte) error) error {
	params := make([][]byte, len(args))
	for i, a := range args {
		params[i] = []byte(a)
	}
	rr := s.conn.ExecParams(ctx, q, params, nil, nil, []int16{1})
	for rr.NextRow() {
		if err := fn(rr.Values()); err != nil {
			rr.Close()
			return err
		}
	}
	_, err := rr.Close()
	return err
}

// checkLayout refuses a database without the saver's tables and columns.
func (s *pgSource) checkLayout(ctx context.Context) error {
	have := map[string]map[string]string{}
	err := s.query(ctx, `SELECT table_name::text, column_name::text, data_type::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name IN ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes', 'checkpoint_migrations')`,
		nil, func(cols [][]byte) error {
			table := string(cols[0])
			if have[table] == nil {
				have[table] = map[string]string{}
			}
			have[table][string(cols[1])] = string(cols[2])
			return nil
		})
	kinds := map[string]string{}
	if err == nil {
		// A view's rows are whatever its query makes (a recursive one's
		// never end), a foreign table's another server's: only tables are
		// read.
		err = s.query(ctx, `SELECT table_name::text, table_type::text FROM information_schema.tables
			WHERE table_schema = current_schema() AND table_name IN ('checkpoints', 'checkpoint_blobs', 'checkpoint_writes', 'checkpoint_migrations')`,
			nil, func(cols [][]byte) error {
				kinds[string(cols[0])] = string(cols[1])
				return nil
			})
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: %s: %v", ErrUnsupportedSource, s.url, err)
	}
	for _, table := range slices.Sorted(maps.Keys(pgTables)) {
		if have[table] == nil {
			return fmt.Errorf("%w: %s is not a LangGraph PostgresSaver database: it has no table %s", ErrUnsupportedSource, s.url, table)
		}
		if kind := kinds[table]; kind != "BASE TABLE" {
			return fmt.Errorf("%w: %s is not a LangGraph PostgresSaver database: %q is a %s, not a table, and its rows are not read", ErrUnsupportedSource, s.url, table,
				map[string]string{"VIEW": "view", "FOREIGN": "foreign table", "LOCAL TEMPORARY": "temporary table"}[kind])
		}
		for _, col := range slices.Sorted(maps.Keys(pgTables[table])) {
			want := pgTables[table][col]
			got, ok := have[table][col]
			if !ok {
				return fmt.Errorf("%w: %s is not a LangGraph PostgresSaver database: table %s has no column %s", ErrUnsupportedSource, s.url, table, col)
			}
			if got != want {
				return fmt.Errorf("%w: %s is not a LangGraph PostgresSaver database: column %s.%s is %s, not %s", ErrUnsupportedSource, s.url, table, col, got, want)
			}
		}
	}
	return nil
}

func (s *pgSource) name() string  { return s.url }
func (s *pgSource) saver() string { return "postgres" }

func (s *pgSource) close() error {
	return s.conn.Close(context.Background())
}

func (s *pgSource) threads(ctx context.Context) ([]string, error) {
	var out []string
	err := s.query(ctx, `SELECT DISTINCT thread_id COLLATE "C" FROM checkpoints ORDER BY 1`, nil, func(cols [][]byte) error {
		out = append(out, string(cols[0]))
		return nil
	})
	return out, err
}

func (s *pgSource) count(ctx context.Context) (int, error) {
	var n int
	err := s.query(ctx, `SELECT count(*) FROM checkpoints`, nil, func(cols [][]byte) error {
		n = int(binary.BigEndian.Uint64(cols[0]))
		return nil
	})
	return n, err
}

type pgBlob struct {
	typ  string
	data []byte
}

// checkRows reports, as the *Problem of its thread (see the SQLite
// source's), the first row of thread larger than the engine stores: a
// checkpoint document past engine.MaxCallBytes, metadata or a pending write
// past engine.MaxValueBytes, a channel value (checkpoint_blobs) past
// engine.MaxListBytes. The server computes the sizes: no such row is sent.
func (s *pgSource) checkRows(ctx context.Context, thread string) error {
	var p *Problem
	be := func(b []byte) int64 { return int64(binary.BigEndian.Uint64(b)) }
	err := s.query(ctx, `SELECT checkpoint_ns, checkpoint_id, doc, md FROM (SELECT checkpoint_ns, checkpoint_id,
			coalesce(octet_length(checkpoint::text), 0)::int8 AS doc, coalesce(octet_length(metadata::text), 0)::int8 AS md
			FROM checkpoints WHERE thread_id = $1) c WHERE doc > $2 OR md > $3 LIMIT 1`,
		[]string{thread, strconv.Itoa(engine.MaxCallBytes), strconv.Itoa(engine.MaxValueBytes)}, func(cols [][]byte) error {
			p = tooLargeCheckpoint(thread, string(cols[0]), string(cols[1]), be(cols[2]), be(cols[3]))
			return nil
		})
	if err == nil && p == nil {
		err = s.query(ctx, `SELECT checkpoint_ns, channel, version, octet_length(blob)::int8 FROM checkpoint_blobs
			WHERE thread_id = $1 AND octet_length(blob) > $2 LIMIT 1`, []string{thread, strconv.Itoa(engine.MaxListBytes)}, func(cols [][]byte) error {
			p = &Problem{ThreadID: thread, CheckpointNS: string(cols[0]), Channel: string(cols[1]), tooLarge: true,
				Reason: fmt.Sprintf("%v: the value at version %s is %d bytes, more than engine.MaxListBytes (%d bytes)", engine.ErrTooLarge, cols[2], be(cols[3]), engine.MaxListBytes)}
			return nil
		})
	}
	if err == nil && p == nil {
		err = s.query(ctx, `SELECT checkpoint_ns, checkpoint_id, channel, task_id, idx::int8, octet_length(blob)::int8 FROM checkpoint_writes
			WHERE thread_id = $1 AND octet_length(blob) > $2 LIMIT 1`, []string{thread, strconv.Itoa(engine.MaxValueBytes)}, func(cols [][]byte) error {
			p = tooLargeWrite(thread, string(cols[0]), string(cols[1]), string(cols[2]), string(cols[3]), be(cols[4]), be(cols[5]))
			return nil
		})
	}
	if err != nil {
		return err
	}
	if p != nil {
		return p
	}
	return nil
}

func (s *pgSource) read(ctx context.Context, thread string) (*rawThread, error) {
	if err := s.checkRows(ctx, thread); err != nil {
		return nil, err
	}
	memo := extMemo{}
	blobs, err := s.blobs(ctx, thread)
	if err != nil {
		return nil, err
	}
	t := &rawThread{id: thread, writes: map[cpKey][]*rawWrite{}}
	rows, err := s.checkpointRows(ctx, thread)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		cp := &rawCheckpoint{ns: r.ns, id: r.id, parent: r.parent}
		doc, values, err := decodeCheckpoint("json", r.doc, nil)
		if err == nil {
			err = s.joinBlobs(cp, doc, values, blobs, memo)
		}
		if err == nil {
			cp.metadata, err = decodeMetadata(r.meta)
		}
		if err != nil {
			return nil, checkpointProblem(thread, cp, err)
		}
		t.cps = append(t.cps, cp)
	}
	ws, err := s.writeRows(ctx, thread)
	if err != nil {
		return nil, err
	}
	for _, r := range ws {
		v, err := decodeTyped(r.typ, r.data, memo)
		if err != nil {
			return nil, writeProblem(thread, r, err)
		}
		t.writes[r.k] = append(t.writes[r.k], &rawWrite{task: r.task, path: r.path, idx: r.idx, channel: r.channel, value: v})
	}
	return t, nil
}

// joinBlobs fills a checkpoint from its JSON document, its values the
// inline ones overridden by the blobs of its channel versions.
func (s *pgSource) joinBlobs(cp *rawCheckpoint, doc, inline map[string]any, blobs map[[3]string]pgBlob, memo extMemo) error {
	values := map[string]any{}
	for ch, v := range inline {
		values[ch] = v
	}
	for ch, ver := range fieldsOf(doc["channel_versions"]) {
		b, ok := blobs[[3]string{cp.ns, ch, versionString(ver)}]
		if !ok || b.typ == "empty" {
			continue
		}
		v, err := decodeTyped(b.typ, b.data, memo)
		if err != nil {
			return &channelError{ch, fmt.Errorf("value at version %s: %w", versionString(ver), err)}
		}
		values[ch] = v
	}
	return cp.fill(doc, values)
}

func (s *pgSource) readBytes(ctx context.Context, thread string, key []byte) (*byteThread, error) {
	if err := s.checkRows(ctx, thread); err != nil {
		return nil, err
	}
	blobs, err := s.blobs(ctx, thread)
	if err != nil {
		return nil, err
	}
	t := &byteThread{id: thread, writes: map[cpKey][]*byteWrite{}}
	rows, err := s.checkpointRows(ctx, thread)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		cp, err := splitJSONCheckpoint(r.doc)
		if err == nil {
			err = pgValues(cp, r.ns, blobs, key)
		}
		if err == nil {
			cp.metadata, err = decodeMetadata(r.meta)
		}
		if err != nil {
			return nil, checkpointProblem(thread, &rawCheckpoint{ns: r.ns, id: r.id}, err)
		}
		cp.ns, cp.id, cp.parent = r.ns, r.id, r.parent
		t.cps = append(t.cps, cp)
	}
	ws, err := s.writeRows(ctx, thread)
	if err != nil {
		return nil, err
	}
	for _, r := range ws {
		b, err := typedBlob(r.typ, r.data, key)
		if err != nil {
			return nil, writeProblem(thread, r, err)
		}
		t.writes[r.k] = append(t.writes[r.k], &byteWrite{task: r.task, path: r.path, idx: r.idx, channel: r.channel, value: b})
	}
	return t, nil
}

// blobs reads the thread's checkpoint_blobs, by namespace, channel and
// version.
func (s *pgSource) blobs(ctx context.Context, thread string) (map[[3]string]pgBlob, error) {
	blobs := map[[3]string]pgBlob{}
	err := s.query(ctx, `SELECT checkpoint_ns, channel, version, type, blob FROM checkpoint_blobs WHERE thread_id = $1`, []string{thread},
		func(cols [][]byte) error {
			blobs[[3]string{string(cols[0]), string(cols[1]), string(cols[2])}] = pgBlob{string(cols[3]), bytes.Clone(cols[4])}
			return nil
		})
	if err != nil {
		return nil, err
	}
	return blobs, nil
}

// pgCheckpointRow is one row of checkpoints: the checkpoint's document and
// metadata as JSON text.
type pgCheckpointRow struct {
	ns, id, parent string
	doc, meta      []byte
}

// checkpointRows reads the thread's checkpoints in (namespace, id) order.
func (s *pgSource) checkpointRows(ctx context.Context, thread string) ([]pgCheckpointRow, error) {
	var rows []pgCheckpointRow
	err := s.query(ctx, `SELECT checkpoint_ns, checkpoint_id, coalesce(parent_checkpoint_id, ''), checkpoint::text, metadata::text
		FROM checkpoints WHERE thread_id = $1`, []string{thread}, func(cols [][]byte) error {
		rows = append(rows, pgCheckpointRow{string(cols[0]), string(cols[1]), string(cols[2]), bytes.Clone(cols[3]), bytes.Clone(cols[4])})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Byte order, as LangGraph compares ids (the database's collation may not).
	slices.SortFunc(rows, func(a, b pgCheckpointRow) int {
		return cmp.Or(strings.Compare(a.ns, b.ns), strings.Compare(a.id, b.id))
	})
	return rows, nil
}

// writeRows reads the thread's checkpoint_writes in LangGraph's order
// (namespace, checkpoint, task_path, task_id, idx), compared as bytes.
func (s *pgSource) writeRows(ctx context.Context, thread string) ([]writeRow, error) {
	var ws []writeRow
	err := s.query(ctx, `SELECT checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, coalesce(type, ''), blob
		FROM checkpoint_writes WHERE thread_id = $1`, []string{thread}, func(cols [][]byte) error {
		ws = append(ws, writeRow{k: cpKey{string(cols[0]), string(cols[1])},
			task: string(cols[2]), path: string(cols[3]), idx: int(int32(binary.BigEndian.Uint32(cols[4]))), channel: string(cols[5]),
			typ: string(cols[6]), data: bytes.Clone(cols[7])})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ws, func(a, b writeRow) int {
		return cmp.Or(strings.Compare(a.k.ns, b.k.ns), strings.Compare(a.k.id, b.k.id),
			strings.Compare(a.path, b.path), strings.Compare(a.task, b.task), cmp.Compare(a.idx, b.idx))
	})
	return ws, nil
}

// pgValues sets a PostgresSaver checkpoint's values as its get_tuple reads
// them: the inline ones (None, str, int, float, bool in the checkpoint's
// JSON) in the serde they would have alone, overridden by the blob of each
// channel's version ("empty": no value).
func pgValues(cp *byteCheckpoint, ns string, blobs map[[3]string]pgBlob, key []byte) error {
	for ch, b := range cp.values {
		v, err := codec.DecodeJSON(b.Data)
		if err != nil {
			return &channelError{ch, err}
		}
		if v == nil {
			cp.values[ch] = codec.Blob{Type: "null", Data: []byte{}}
			continue
		}
		data, err := encodePy(nil, v)
		if err != nil {
			return &channelError{ch, err}
		}
		cp.values[ch] = codec.Blob{Type: "msgpack", Data: data}
	}
	for ch, ver := range cp.versions {
		b, ok := blobs[[3]string{ns, ch, ver}]
		if !ok {
			continue
		}
		if b.typ == "empty" {
			delete(cp.values, ch)
			continue
		}
		v, err := typedBlob(b.typ, b.data, key)
		if err != nil {
			return &channelError{ch, fmt.Errorf("value at version %s: %w", ver, err)}
		}
		cp.values[ch] = v
	}
	cp.docType = "msgpack"
	return nil
}
