// Import's reading of one row line of an export: its columns, and the
// INSERT's arguments they give.

package engine

import (
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/agentstate/agentstate/codec"
)

// lineFields splits a line's msgpack (an object) into its keys and the
// msgpack of each value.
func lineFields(body []byte) (map[string][]byte, error) {
	pos, n, err := mpMapAt(body, 0)
	if err != nil {
		return nil, fmt.Errorf("a line is an object of columns")
	}
	fields := make(map[string][]byte, n)
	for range n {
		end, err := mpSkip(body, pos)
		if err != nil {
			return nil, err
		}
		k, ok := mpString(body[pos:end])
		if !ok {
			return nil, fmt.Errorf("a key that is not a string")
		}
		pos = end
		if end, err = mpSkip(body, pos); err != nil {
			return nil, err
		}
		if _, dup := fields[k]; dup {
			return nil, fmt.Errorf("column %q appears twice", k)
		}
		fields[k] = body[pos:end]
		pos = end
	}
	return fields, nil
}

// mpString reads raw (one msgpack value) as a string.
func mpString(raw []byte) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	v, err := mpRead(raw)
	if err != nil || v.kind != mpStr || raw[0] >= 0xc4 && raw[0] <= 0xc6 {
		return "", false
	}
	return string(v.s), true
}

// mpInt64 reads raw (one msgpack value) as an integer.
func mpInt64(raw []byte) (int64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	v, err := mpRead(raw)
	if err != nil || v.kind != mpInt {
		return 0, false
	}
	return v.i, true
}

// importLimit is the bound a call that stores a column's value applies.
func importLimit(t *exportTable, col exportCol) (int, string) {
	if t.name == "blobs" && col.kind == colTyped {
		return MaxListBytes, "MaxListBytes"
	}
	return MaxValueBytes, "MaxValueBytes"
}

// importArgs turns one row line into the INSERT's arguments.
func importArgs(t *exportTable, fields map[string][]byte, effort int) ([]any, string, error) {
	known := map[string]bool{"table": true}
	formats, err := compressedColumns(fields, known)
	if err != nil {
		return nil, "", err
	}
	formatOf := func(col string) byte {
		if f, ok := formats[col]; ok {
			return f
		}
		return codec.FormatV1
	}
	args := make([]any, len(t.cols))
	typ, thread := "", ""
	enc := int64(encPlain)
	for i, col := range t.cols {
		if col.kind == colPack {
			continue // set below, from the value
		}
		decoded := typ == codec.TypeMsgpack && enc == encPlain
		key := col.name
		if col.kind == colTyped {
			key = "data"
			if decoded {
				key = "value"
			}
		}
		known[key] = true
		raw, present := fields[key]
		isNull := !present || (col.kind != colMsgpack && col.kind != colTyped && len(raw) == 1 && raw[0] == 0xc0)
		if col.kind == colEnc {
			// Exports made before version deltas have no enc: their
			// values are whole.
			if isNull {
				args[i] = int64(encPlain)
				continue
			}
			n, ok := mpInt64(raw)
			if !ok || n < encPlain || n > encDelta {
				return nil, "", fmt.Errorf("column enc: want 0, 1 or 2")
			}
			enc = n
			args[i] = enc
			continue
		}
		if col.name == "base" && (enc == encDelta) != present {
			return nil, "", fmt.Errorf("a value with enc %d must %s a base", enc, map[bool]string{true: "have", false: "not have"}[enc == encDelta])
		}
		if isNull {
			if col.kind == colText || col.kind == colInt || col.kind == colBytes {
				return nil, "", fmt.Errorf("column %s is missing", col.name)
			}
			args[i] = nil
			continue
		}
		limit, limitName := importLimit(t, col)
		switch col.kind {
		case colText, colTextNull:
			s, ok := mpString(raw)
			if !ok {
				return nil, "", fmt.Errorf("column %s: want a string", col.name)
			}
			if col.name == "type" {
				typ = s
			}
			if col.name == t.threadCol {
				thread = s
			}
			args[i] = s
		case colInt, colIntNull:
			n, ok := mpInt64(raw)
			if !ok {
				return nil, "", fmt.Errorf("column %s: want an integer", col.name)
			}
			args[i] = n
		case colBytes:
			s, ok := mpString(raw)
			b, err := base64.StdEncoding.DecodeString(s)
			if !ok || err != nil || len(b) == 0 || len(b)%4 != 0 || len(b) > 4*maxVectorDims {
				return nil, "", fmt.Errorf("column %s: want the base64 of 1 to %d float32 values", col.name, maxVectorDims)
			}
			args[i] = b
		case colTyped, colMsgpack:
			var b []byte
			var err error
			if col.kind == colTyped && !decoded {
				b, err = importData(raw, typ, enc, limit, limitName)
			} else {
				b, err = importMsgpack(t, col, raw, formatOf(col.name), effort, limit, limitName)
			}
			if err != nil {
				return nil, "", err
			}
			args[i] = b
		}
	}
	for k := range fields {
		if !known[k] {
			return nil, "", fmt.Errorf("unknown column %q", k)
		}
	}
	// A pending write is packed as PutWrites packs it.
	if p := slices.IndexFunc(t.cols, func(c exportCol) bool { return c.kind == colPack }); p >= 0 {
		args[p] = int64(encPlain)
		if data, ok := args[p+1].([]byte); ok {
			args[p], args[p+1] = storeWrite(data)
		}
	}
	return args, thread, nil
}

// compressedColumns reads a line's lists of the columns that were stored
// compressed (compressionKeys), marking those keys known: it returns each
// listed column's envelope format.
func compressedColumns(fields map[string][]byte, known map[string]bool) (map[string]byte, error) {
	formats := map[string]byte{} // column -> compressed envelope format
	for _, c := range compressionKeys {
		known[c.key] = true
		raw, ok := fields[c.key]
		if !ok {
			continue
		}
		var cols []string
		if err := codec.Unmarshal(append([]byte{codec.FormatV1}, raw...), &cols); err != nil {
			return nil, fmt.Errorf("%s: want a list of column names", c.key)
		}
		for _, col := range cols {
			if _, dup := formats[col]; dup {
				return nil, fmt.Errorf("column %s is listed as compressed twice", col)
			}
			formats[col] = c.format
		}
	}
	return formats, nil
}

// importData reads a caller's value (its "data": base64 of the bytes as
// stored, enc telling how) within the limit.
func importData(raw []byte, typ string, enc int64, limit int, limitName string) ([]byte, error) {
	s, ok := mpString(raw)
	if !ok {
		return nil, fmt.Errorf("column data: want base64")
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("column data: %v", err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: column data is %d bytes, more than %s (%d)", ErrTooLarge, len(b), limitName, limit)
	}
	if enc == encPacked {
		// Readers inflate it: the limit holds for what it
		// inflates to, not only for the bytes given.
		if err := checkPacked("column data", typ, b, limit, limitName); err != nil {
			return nil, err
		}
	}
	return nonNil(b), nil
}

// importMsgpack turns a column of the engine's msgpack (decoded to JSON in
// the export) back into what is stored: checked, in its envelope,
// compressed again when format says it was.
func importMsgpack(t *exportTable, col exportCol, raw []byte, format byte, effort int, limit int, limitName string) ([]byte, error) {
	// The rules a call that stores the value applies: nesting,
	// string keys, size.
	if len(raw) > limit {
		return nil, fmt.Errorf("%w: column %s is %d bytes, more than %s (%d)", ErrTooLarge, col.name, len(raw), limitName, limit)
	}
	if err := codec.Check(raw); err != nil {
		return nil, fmt.Errorf("column %s: %w", col.name, err)
	}
	b := append(make([]byte, 0, len(raw)+1), codec.FormatV1)
	b = append(b, raw...)
	if format != codec.FormatV1 {
		var err error
		if b, err = codec.Compress(b, format, effort); err != nil {
			return nil, fmt.Errorf("column %s: %w", col.name, err)
		}
	}
	if t.name == "checkpoints" && col.name == "checkpoint" && format == codec.FormatV1 {
		b = packCheckpoint(b)
	}
	return b, nil
}
