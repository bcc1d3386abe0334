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

var errHead = fmt.Errorf("%w: malformed msgpack header", ErrCorrupt)

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
	c := b[pos]
	pos++
	uintN := func(size int) (int, error) {
		if size > len(b)-pos {
			return 0, errHead
		}
		var v uint64
		switch size {
		case 1:
			v = uint64(b[pos])
		case 2:
			v = uint64(binary.BigEndian.Uint16(b[pos:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(b[pos:]))
		}
		pos += size
		if v > uint64(len(b)) {
			return 0, errHead
		}
		return int(v), nil
	}
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
	case c >= 0x80 && c <= 0x8f:
		items = 2 * int(c&0x0f)
	case c >= 0x90 && c <= 0x9f:
		items = int(c & 0x0f)
	case c >= 0xa0 && c <= 0xbf:
		payload = int(c & 0x1f)
	case c == 0xc4 || c == 0xd9:
		payload, err = uintN(1)
	case c == 0xc5 || c == 0xda:
		payload, err = uintN(2)
	case c == 0xc6 || c == 0xdb:
		payload, err = uintN(4)
	case c == 0xc7:
		payload, err = uintN(1)
		payload++
	case c == 0xc8:
		payload, err = uintN(2)
		payload++
	case c == 0xc9:
		payload, err = uintN(4)
		payload++
	case c == 0xca || c == 0xce || c == 0xd2:
		payload = 4
	case c == 0xcb || c == 0xcf || c == 0xd3:
		payload = 8
	case c == 0xcc || c == 0xd0:
		payload = 1
	case c == 0xcd || c == 0xd1:
		payload = 2
	case c >= 0xd4 && c <= 0xd8:
		payload = 1 + 1<<(c-0xd4)
	case c == 0xdc:
		items, err = uintN(2)
	case c == 0xdd:
		items, err = uintN(4)
	case c == 0xde:
		items, err = uintN(2)
		items *= 2
	case c == 0xdf:
		items, err = uintN(4)
		items *= 2
	default:
		return 0, 0, 0, errHead // 0xc1, never used
	}
	if err != nil {
		return 0, 0, 0, err
	}
	if payload > len(b)-pos || items > len(b)-pos {
		// Every nested value takes at least one byte.
		return 0, 0, 0, errHead
	}
	return pos, payload, items, nil
}

// scan walks one msgpack value at the start of data without decoding it and
// checks that every length it declares fits in the bytes that follow and that
// containers nest at most MaxDepth deep. It exists because the msgpack decoder sizes
// slices from declared lengths before reading them: a 6-byte input claiming
// four billion elements must be refused here, not allocated.
func scan(data []byte) (n int, err error) {
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
			return 0, fmt.Errorf("%w (at offset %d)", err, pos)
		}
		if isContainer(data[pos]) {
			// len(pending) is this container's nesting level.
			if len(pending) > MaxDepth {
				return 0, fmt.Errorf("%w: containers nested deeper than %d (at offset %d)", ErrCorrupt, MaxDepth, pos)
			}
			if items > 0 {
				pending = append(pending, items)
			}
		}
		pos = next + payload
	}
	return pos, nil
}
