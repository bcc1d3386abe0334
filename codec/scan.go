package codec

import (
	"encoding/binary"
	"fmt"
)

// MaxDepth bounds the nesting of containers (maps and arrays) in a stored
// value: a value whose containers nest MaxDepth deep is written and read
// back; one level more is refused by Marshal (ErrTooDeep) and by every
// reader (ErrCorrupt). The containers the engine wraps a caller's value in
// count (a checkpoint's metadata map is one level, a message's fields sit
// three levels down in a stored write).
const MaxDepth = 512

var errHead = refines(ErrCorrupt, "malformed msgpack header")

// Head reads the header of the msgpack value at b[pos] without decoding it.
// It returns the position of the first byte after the header, the payload
// length for str/bin/ext and fixed-size scalars (0 otherwise), and the number
// of nested values for arrays (n) and maps (2n). Every declared length is
// checked against the bytes that follow (each nested value takes at least
// one byte), so a few hostile bytes can never claim gigabytes; errors match
// ErrCorrupt.
func Head(b []byte, pos int) (next, payload, items int, err error) {
	if pos < 0 || pos >= len(b) {
		return 0, 0, 0, errHead
	}
	n := headerLen(b[pos])
	if n == 0 || n > len(b)-pos {
		return 0, 0, 0, errHead
	}
	payload, items = headerOf(b[pos : pos+n])
	next = pos + n
	if payload > len(b)-next || items > len(b)-next || payload < 0 || items < 0 {
		// Every nested value takes at least one byte (and a 32-bit int
		// can read a 32-bit length as negative).
		return 0, 0, 0, errHead
	}
	return next, payload, items, nil
}

// headerLen is the length of the header of a value whose first byte is c:
// the code and the bytes of its length or count (an extension's type byte
// counts as payload). It is 0 for 0xc1, a code msgpack never uses.
func headerLen(c byte) int {
	switch c {
	case 0xc4, 0xd9, 0xc7: // bin8, str8, ext8
		return 2
	case 0xc5, 0xda, 0xc8, 0xdc, 0xde: // 16-bit lengths and counts
		return 3
	case 0xc6, 0xdb, 0xc9, 0xdd, 0xdf: // 32-bit
		return 5
	case 0xc1:
		return 0
	}
	return 1
}

// headerOf decodes a whole header (headerLen(h[0]) bytes): the payload
// length and the number of nested values, as Head returns them.
func headerOf(h []byte) (payload, items int) {
	c := h[0]
	var n int
	switch len(h) {
	case 2:
		n = int(h[1])
	case 3:
		n = int(binary.BigEndian.Uint16(h[1:]))
	case 5:
		n = int(binary.BigEndian.Uint32(h[1:]))
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
	case c&0xf0 == 0x80:
		items = 2 * int(c&0x0f)
	case c&0xf0 == 0x90:
		items = int(c & 0x0f)
	case c&0xe0 == 0xa0:
		payload = int(c & 0x1f)
	case c == 0xc4 || c == 0xc5 || c == 0xc6 || c == 0xd9 || c == 0xda || c == 0xdb:
		payload = n
	case c == 0xc7 || c == 0xc8 || c == 0xc9:
		payload = n + 1 // the type byte
	case c == 0xcc || c == 0xd0:
		payload = 1
	case c == 0xcd || c == 0xd1:
		payload = 2
	case c == 0xca || c == 0xce || c == 0xd2:
		payload = 4
	case c == 0xcb || c == 0xcf || c == 0xd3:
		payload = 8
	case c >= 0xd4 && c <= 0xd8:
		payload = 1 + 1<<(c-0xd4)
	case c == 0xdc || c == 0xdd:
		items = n
	case c == 0xde || c == 0xdf:
		items = 2 * n
	}
	return payload, items
}

// scan walks one msgpack value at the start of data without decoding it and
// checks that every length it declares fits in the bytes that follow and that
// containers nest at most MaxDepth deep. It exists because the msgpack decoder sizes
// slices from declared lengths before reading them: a 6-byte input claiming
// four billion elements must be refused here, not allocated.
func scan(data []byte) (n int, err error) {
	n, _, err = scanCost(data, MaxDepth, ErrCorrupt)
	return n, err
}

// scanDepth is scan with containers allowed maxDepth deep, refused with
// deepErr past it.
func scanDepth(data []byte, maxDepth int, deepErr error) (n int, err error) {
	n, _, err = scanCost(data, maxDepth, deepErr)
	return n, err
}

// valueCost is what the codec counts for one decoded value besides its
// bytes: an interface (or slice element, or map key or value) slot.
const valueCost = 16

// MaxCost bounds the memory one value takes once decoded, as the codec
// counts it: 16 bytes for every value (each element of a list, each key
// and each value of a map) plus the bytes of its strings, binaries and
// extensions. Marshal refuses a value that would count more (ErrTooLarge),
// and Unmarshal refuses one before decoding it, so a list of 64 MiB of
// nils (a gigabyte of interfaces, from a few kilobytes of zstd) is never
// allocated.
const MaxCost = 2 * MaxSize

// costOf is what decoding a value whose header starts with c and declares
// payload bytes counts (see MaxCost).
func costOf(c byte, payload int) int {
	if c&0xe0 == 0xa0 || c >= 0xc4 && c <= 0xc9 || c >= 0xd4 && c <= 0xdb {
		// str, bin, ext, fixext: their bytes are copied out.
		return valueCost + payload
	}
	return valueCost
}

// scanCost is scanDepth that also adds up what decoding the value costs
// (see MaxCost).
func scanCost(data []byte, maxDepth int, deepErr error) (n, cost int, err error) {
	pos := 0
	pending := []int{1} // values still to read at each open nesting level
	for len(pending) > 0 {
		if pending[len(pending)-1] == 0 {
			pending = pending[:len(pending)-1]
			continue
		}
		pending[len(pending)-1]--
		next, payload, items, err := Head(data, pos)
		if err != nil {
			return 0, 0, fmt.Errorf("%w (at offset %d)", err, pos)
		}
		cost += costOf(data[pos], payload)
		if isContainer(data[pos]) {
			// len(pending) is this container's nesting level.
			if len(pending) > maxDepth {
				return 0, 0, fmt.Errorf("%w: containers nested deeper than %d (at offset %d)", deepErr, maxDepth, pos)
			}
			if items > 0 {
				pending = append(pending, items)
			}
		}
		pos = next + payload
	}
	return pos, cost, nil
}
