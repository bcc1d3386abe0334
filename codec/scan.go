package codec

import (
	"encoding/binary"
	"fmt"
)

// maxDepth bounds the nesting of containers in a stored value.
const maxDepth = 512

// scan walks one msgpack value at the start of data without decoding it and
// checks that every length it declares fits in the bytes that follow and that
// nesting stays under maxDepth. It exists because the msgpack decoder sizes
// slices from declared lengths before reading them: a 6-byte input claiming
// four billion elements must be refused here, not allocated.
func scan(data []byte) (n int, err error) {
	pos := 0
	pending := []int{1} // values still to read at each open nesting level
	need := func(k int) error {
		if k < 0 || k > len(data)-pos {
			return fmt.Errorf("%w: length %d at offset %d exceeds the %d bytes left", ErrCorrupt, k, pos, len(data)-pos)
		}
		return nil
	}
	uint := func(size int) (int, error) {
		if err := need(size); err != nil {
			return 0, err
		}
		var v uint64
		switch size {
		case 1:
			v = uint64(data[pos])
		case 2:
			v = uint64(binary.BigEndian.Uint16(data[pos:]))
		case 4:
			v = uint64(binary.BigEndian.Uint32(data[pos:]))
		}
		pos += size
		if v > uint64(len(data)) {
			return 0, fmt.Errorf("%w: length %d at offset %d exceeds the input", ErrCorrupt, v, pos)
		}
		return int(v), nil
	}
	for len(pending) > 0 {
		if pending[len(pending)-1] == 0 {
			pending = pending[:len(pending)-1]
			continue
		}
		pending[len(pending)-1]--
		if err := need(1); err != nil {
			return 0, err
		}
		c := data[pos]
		pos++
		skip, items := 0, -1
		switch {
		case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		case c >= 0x80 && c <= 0x8f:
			items = 2 * int(c&0x0f)
		case c >= 0x90 && c <= 0x9f:
			items = int(c & 0x0f)
		case c >= 0xa0 && c <= 0xbf:
			skip = int(c & 0x1f)
		case c == 0xc4 || c == 0xd9:
			skip, err = uint(1)
		case c == 0xc5 || c == 0xda:
			skip, err = uint(2)
		case c == 0xc6 || c == 0xdb:
			skip, err = uint(4)
		case c == 0xc7:
			skip, err = uint(1)
			skip++
		case c == 0xc8:
			skip, err = uint(2)
			skip++
		case c == 0xc9:
			skip, err = uint(4)
			skip++
		case c == 0xca || c == 0xce || c == 0xd2:
			skip = 4
		case c == 0xcb || c == 0xcf || c == 0xd3:
			skip = 8
		case c == 0xcc || c == 0xd0:
			skip = 1
		case c == 0xcd || c == 0xd1:
			skip = 2
		case c >= 0xd4 && c <= 0xd8:
			skip = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			items, err = uint(2)
		case c == 0xdd:
			items, err = uint(4)
		case c == 0xde:
			items, err = uint(2)
			items *= 2
		case c == 0xdf:
			items, err = uint(4)
			items *= 2
		default:
			return 0, fmt.Errorf("%w: reserved msgpack code 0x%02x at offset %d", ErrCorrupt, c, pos-1)
		}
		if err != nil {
			return 0, err
		}
		if err := need(skip); err != nil {
			return 0, err
		}
		pos += skip
		if items > 0 {
			// Every element takes at least one byte.
			if err := need(items); err != nil {
				return 0, err
			}
			if len(pending) >= maxDepth {
				return 0, fmt.Errorf("%w: nesting deeper than %d", ErrCorrupt, maxDepth)
			}
			pending = append(pending, items)
		}
	}
	return pos, nil
}
