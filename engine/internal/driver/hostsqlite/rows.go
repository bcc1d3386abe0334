//go:build js || (wasip1 && hostsqlite)

// Decoding a row of a result from the buffer the host wrote, with SQLite's
// conversions between column types.

package hostsqlite

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
)

// row decodes the values of one row of a result in place.
type row struct {
	b    []byte // the rest of the result
	cols []col
}

type col struct {
	tag byte
	v   []byte // the value's bytes (8 for numbers)
}

func (r *row) reset(b []byte, ncols int) {
	r.b = b
	if cap(r.cols) < ncols {
		r.cols = make([]col, ncols)
	}
	r.cols = r.cols[:ncols]
}

var errShortResult = errors.New("agentstate: internal: short result from the SQLite host")

func (r *row) scan() error {
	b := r.b
	for i := range r.cols {
		if len(b) < 1 {
			return errShortResult
		}
		t := b[0]
		b = b[1:]
		switch t {
		case tagInt, tagFloat:
			if len(b) < 8 {
				return errShortResult
			}
			r.cols[i] = col{t, b[:8:8]}
			b = b[8:]
		case tagText, tagBlob:
			if len(b) < 4 {
				return errShortResult
			}
			n := int(binary.LittleEndian.Uint32(b))
			if len(b) < 4+n {
				return errShortResult
			}
			r.cols[i] = col{t, b[4 : 4+n : 4+n]}
			b = b[4+n:]
		default:
			r.cols[i] = col{tagNull, nil}
		}
	}
	r.b = b
	return nil
}

func (r *row) Columns() int { return len(r.cols) }

func (r *row) Null(i int) bool { return r.cols[i].tag == tagNull }

func (r *row) Int64(i int) int64 { return r.cols[i].int64() }

func (r *row) Float(i int) float64 { return r.cols[i].float() }

func (r *row) Text(i int) string { return r.cols[i].text() }

func (r *row) Blob(i int) []byte { return r.cols[i].blob() }

// Conversions between storage classes follow SQLite's (sqlite3_column_*).
func (c col) int64() int64 {
	switch c.tag {
	case tagInt:
		return int64(binary.LittleEndian.Uint64(c.v))
	case tagFloat:
		return floatToInt(math.Float64frombits(binary.LittleEndian.Uint64(c.v)))
	case tagText, tagBlob:
		return textToInt(c.v)
	}
	return 0
}

func (c col) float() float64 {
	switch c.tag {
	case tagInt:
		return float64(int64(binary.LittleEndian.Uint64(c.v)))
	case tagFloat:
		return math.Float64frombits(binary.LittleEndian.Uint64(c.v))
	case tagText, tagBlob:
		return textToFloat(c.v)
	}
	return 0
}

func (c col) text() string {
	switch c.tag {
	case tagText, tagBlob:
		return string(c.v)
	case tagInt:
		return strconv.FormatInt(int64(binary.LittleEndian.Uint64(c.v)), 10)
	case tagFloat:
		return floatText(math.Float64frombits(binary.LittleEndian.Uint64(c.v)))
	}
	return ""
}

func (c col) blob() []byte {
	switch c.tag {
	case tagText, tagBlob:
		return c.v
	case tagInt, tagFloat:
		return []byte(c.text())
	}
	return nil
}

func floatToInt(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f <= math.MinInt64:
		return math.MinInt64
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(f)
}

// textToInt reads the integer prefix of b, as SQLite does for a text read
// as an integer ("12abc" is 12, "abc" is 0).
func textToInt(b []byte) int64 {
	s := strings.TrimLeft(string(b), " \t\n\f\r")
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if v, err := strconv.ParseInt(s[:end], 10, 64); err == nil {
		return v
	}
	if f := textToFloat(b); f != 0 {
		return floatToInt(f)
	}
	return 0
}

func textToFloat(b []byte) float64 {
	s := strings.TrimSpace(string(b))
	// Only the leading run of characters a number is written with can be
	// the number SQLite reads (it takes no "inf" or "nan"): trying every
	// prefix of a long text was quadratic (a 100 KB blob read as an
	// integer took gigabytes).
	n := 0
	for n < len(s) && strings.IndexByte("0123456789+-.eE", s[n]) >= 0 {
		n++
	}
	for end := n; end > 0; end-- {
		if f, err := strconv.ParseFloat(s[:end], 64); err == nil {
			return f
		}
	}
	return 0
}

// floatText renders f as SQLite does: the shortest text that reads back
// as f, with ".0" on whole numbers.
func floatText(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eEnN") {
		s += ".0"
	}
	return s
}
