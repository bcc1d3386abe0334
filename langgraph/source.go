package langgraph

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// A source is a LangGraph saver's storage: a SqliteSaver file (LangGraph.js
// or Python) or a PostgresSaver database. Each reads one thread at a time
// into the same shape, values decoded by their serde but not yet converted.
type source interface {
	// name is the source as errors show it (a URL without its password).
	name() string
	// saver is "sqlite" or "postgres".
	saver() string
	threads(ctx context.Context) ([]string, error)
	count(ctx context.Context) (int, error)
	// read returns a thread's checkpoints (every namespace) and writes. A
	// value it cannot decode is a *Problem error; other errors are the
	// source's own (I/O, a lost connection).
	read(ctx context.Context, thread string) (*rawThread, error)
	// readBytes returns a thread in the checkpoint protocol's form: every
	// value as its serde type and bytes (decrypted with key when the
	// source's serde was LangGraph's EncryptedSerializer).
	readBytes(ctx context.Context, thread string, key []byte) (*byteThread, error)
	close() error
}

// openSource opens src: a postgres:// or postgresql:// URL, or the path of
// a SqliteSaver file.
func openSource(ctx context.Context, src string) (source, error) {
	if strings.HasPrefix(src, "postgres://") || strings.HasPrefix(src, "postgresql://") {
		return openPostgres(ctx, src)
	}
	s, err := openSQLite(ctx, src)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// cpKey names a checkpoint inside a thread.
type cpKey struct{ ns, id string }

type rawThread struct {
	id     string
	cps    []*rawCheckpoint      // in (namespace, id) order
	writes map[cpKey][]*rawWrite // each checkpoint's, in (task_path, task_id, idx) order
}

// rawCheckpoint is a checkpoint as the source holds it: values decoded by
// their serde (JSON values, or Python values with *pyRaw parts).
type rawCheckpoint struct {
	ns, id, parent string
	v              int
	ts             string
	values         map[string]any
	versions       map[string]string
	seen           map[string]map[string]string
	updated        []string // sorted; nil when absent
	metadata       map[string]any
}

type rawWrite struct {
	task, path string
	idx        int
	channel    string
	value      any
}

// writeRow is one row of a source's writes: a pending write, its
// checkpoint, and its value's serde type and stored bytes, which are the
// row's own.
type writeRow struct {
	k          cpKey
	task, path string
	idx        int
	channel    string
	typ        string
	data       []byte
}

// fill sets a checkpoint's fields from its decoded document (the
// Checkpoint dict, both LangGraphs' names) and its channel values.
func (cp *rawCheckpoint) fill(doc, values map[string]any) error {
	switch v := doc["v"].(type) {
	case int64:
		cp.v = int(v)
	case float64:
		cp.v = int(v)
	}
	cp.ts, _ = doc["ts"].(string)
	if ps, ok := listItems(doc["pending_sends"]); ok && len(ps) > 0 {
		return fmt.Errorf("checkpoint format v%d keeps %d sends in pending_sends, which LangGraph migrates on read; such checkpoints (before format 4) are not covered", cp.v, len(ps))
	}
	cp.versions = map[string]string{}
	for ch, v := range fieldsOf(doc["channel_versions"]) {
		cp.versions[ch] = versionString(v)
	}
	cp.seen = versionsSeen(doc)
	if u, ok := updatedChannels(doc); ok {
		cp.updated = u
	}
	cp.values = values
	if cp.values == nil {
		cp.values = map[string]any{}
	}
	return nil
}

// versionsSeen reads a checkpoint document's versions_seen: by node, the
// version of each channel it saw.
func versionsSeen(doc map[string]any) map[string]map[string]string {
	seen := map[string]map[string]string{}
	for node, m := range fieldsOf(doc["versions_seen"]) {
		seen[node] = map[string]string{}
		for ch, v := range fieldsOf(m) {
			seen[node][ch] = versionString(v)
		}
	}
	return seen
}

// updatedChannels reads the channel names of a checkpoint document's
// updated_channels, sorted (an empty list gives an empty slice, not nil);
// ok is false when the document has no such list.
func updatedChannels(doc map[string]any) (_ []string, ok bool) {
	uc, ok := listItems(doc["updated_channels"])
	if !ok {
		return nil, false
	}
	updated := []string{}
	for _, x := range uc {
		if s, ok := x.(string); ok {
			updated = append(updated, s)
		}
	}
	slices.Sort(updated)
	return updated, true
}

// decodeCheckpoint decodes a checkpoint document stored with serde typ. A
// value that does not decode is reported with its channel.
func decodeCheckpoint(typ string, data []byte, memo extMemo) (doc, values map[string]any, err error) {
	if typ == "msgpack" {
		return decodePyCheckpoint(data, memo)
	}
	v, err := decodeTyped(typ, data, memo)
	if err != nil {
		return nil, nil, err
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("the checkpoint is %s, not a map", describe(v))
	}
	values, _ = doc["channel_values"].(map[string]any)
	return doc, values, nil
}

// channelError is a value of one channel that does not decode.
type channelError struct {
	channel string
	err     error
}

func (e *channelError) Error() string { return e.err.Error() }
func (e *channelError) Unwrap() error { return e.err }

// decodePyCheckpoint decodes LangGraph Python's msgpack checkpoint map,
// channel value by channel value, so that a damaged value names its
// channel.
func decodePyCheckpoint(data []byte, memo extMemo) (doc, values map[string]any, err error) {
	r := &pyReader{b: data, memo: memo}
	n, p, err := r.mapLen(0)
	if err != nil {
		return nil, nil, err
	}
	doc = map[string]any{}
	for range n {
		k, next, err := r.value(p, 1)
		if err != nil {
			return nil, nil, err
		}
		key, _ := k.(string)
		if key != "channel_values" {
			v, next, err := r.value(next, 1)
			if err != nil {
				return nil, nil, fmt.Errorf("checkpoint field %q: %w", key, err)
			}
			doc[key], p = v, next
			continue
		}
		if next < len(data) && data[next] == 0xc0 {
			p = next + 1
			continue
		}
		m, q, err := r.mapLen(next)
		if err != nil {
			return nil, nil, fmt.Errorf("channel_values: %w", err)
		}
		values = make(map[string]any, m)
		for range m {
			ck, q2, err := r.value(q, 2)
			if err != nil {
				return nil, nil, fmt.Errorf("channel_values: %w", err)
			}
			ch, _ := ck.(string)
			v, q3, err := r.value(q2, 2)
			if err != nil {
				return nil, nil, &channelError{ch, err}
			}
			values[ch], q = v, q3
		}
		p = q
	}
	return doc, values, nil
}

// Probe reports whether src is a LangGraph saver's storage that Import
// reads (a SqliteSaver file, or a PostgresSaver database given as a
// postgres:// URL): nil if it is, ErrUnsupportedSource saying why if not.
// It reads only the schema.
func Probe(ctx context.Context, src string) error {
	s, err := openSource(ctx, src)
	if err != nil {
		return err
	}
	return s.close()
}
