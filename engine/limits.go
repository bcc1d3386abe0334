package engine

import (
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/codec"
)

// Limits of what a call may store. Everything the engine accepts must read
// back through every reader, and a stored value is read whole: SQLite, as
// ncruces/go-sqlite3 builds it, gives each connection a WebAssembly heap of
// 256 MiB, and a row of n bytes needs n of it to read and 2n to write (the
// bound copy and the record). Beyond that heap ncruces panics ("sqlite3:
// out of memory": a 32 MiB message did, sorted through a query with its
// writes); the driver turns that panic into driver.ErrNoMemory, which the
// engine returns as ErrTooLarge. The limits leave the heap room for a row
// of MaxRowBytes next to a value of MaxValueBytes and SQLite's caches.
//
// Each limit is checked where the value is encoded (the only place a value
// becomes bytes), before anything is written, and refused with ErrTooLarge
// naming the limit and the argument. Nesting is bounded the same way by
// codec.MaxDepth (512 levels of maps and lists, counting the engine's own
// wrapping), refused with ErrInvalidArgument.
const (
	// MaxValueBytes bounds one value a call stores, as msgpack: checkpoint
	// metadata and versions, a pending write (PutWrites, or the writes a
	// Commit step makes to one channel, its messages included), an event's
	// content and its metadata, a store value, a thread's or a run's
	// metadata and kwargs.
	MaxValueBytes = 16 << 20
	// MaxMessageBytes bounds a message: it is stored inside the write
	// that carries it, so the messages of one write share MaxValueBytes.
	MaxMessageBytes = MaxValueBytes
	// MaxListBytes bounds a channel's value at one checkpoint, as
	// msgpack before compression: the message list a Commit stores (every
	// step in full mode, each snapshot in delta mode), a LangGraph channel
	// value given to Put. A Commit whose list would pass it is refused;
	// Compact the thread to go on. It is codec.MaxSize, the most any
	// reader inflates one stored value to: a value that would inflate
	// further (a few kilobytes of zstd can claim gigabytes) is refused
	// with ErrTooLarge before more is allocated, and so is one whose
	// decoded form would count more than codec.MaxCost (twice as much:
	// 16 bytes a value plus its strings; a list of 64 MiB of nils would
	// take a gigabyte).
	MaxListBytes = codec.MaxSize
	// MaxRowBytes bounds what one row stores, compressed or not: a
	// channel value (at most MaxListBytes) beside a few small columns.
	MaxRowBytes = MaxListBytes + 1<<20
	// MaxCallBytes bounds what one call writes in all (a store batch, an
	// event batch, PutWrites, a Put's values, a Commit's writes and the
	// values it stores): SQLite holds the pages of large values a
	// transaction writes until it commits (measured: 12 values of 16 MiB
	// commit in one transaction, 16 do not; 2 of 64 MiB do, 3 do not).
	// Calls that write a whole file in one transaction (Import, a Batch
	// such as package langgraph's import, ConvertFile) have no such bound:
	// past about 150 MiB of large values they fail with ErrTooLarge and
	// change nothing.
	MaxCallBytes = 128 << 20
	// MaxImportLineBytes bounds one line of an export that Import reads:
	// JSON spends at most 8 bytes per msgpack byte ({"$str":"/w=="} for a
	// 2-byte string that is not UTF-8), and a row's values take at most
	// MaxRowBytes. Import holds one line's values in memory, never the
	// line itself.
	MaxImportLineBytes = 8 * MaxRowBytes
)

// callBudget adds up what a call writes and refuses it past MaxCallBytes.
type callBudget struct {
	what string
	n    int
}

func (b *callBudget) add(n int) error {
	b.n += n
	if b.n > MaxCallBytes {
		return fmt.Errorf("%w: %s writes more than MaxCallBytes (%d bytes) in one call; split it", ErrTooLarge, b.what, MaxCallBytes)
	}
	return nil
}

// encodeValue encodes a value a caller stores, named what in errors, within
// MaxValueBytes.
func encodeValue(what string, v any) ([]byte, error) {
	b, err := codec.MarshalMax(v, MaxValueBytes)
	if err != nil {
		return nil, encodeError(what, "MaxValueBytes", MaxValueBytes, err)
	}
	return b, nil
}

// encodeError turns codec's refusal of a value into the engine's: a value
// past its limit is ErrTooLarge, one nested too deep (or that would not
// read back) ErrInvalidArgument.
func encodeError(what, limit string, n int, err error) error {
	if errors.Is(err, codec.ErrTooLarge) {
		return fmt.Errorf("%w: %s encodes to more than %s (%d bytes)", ErrTooLarge, what, limit, n)
	}
	return fmt.Errorf("%w: %s: %w", ErrInvalidArgument, what, err)
}

// checkBlob checks a payload a caller gives as bytes (LangGraph's serde
// output) against limit, and, when its type says it is the engine's own
// msgpack, that it reads back.
func checkBlob(what string, b codec.Blob, limit int, limitName string) error {
	if len(b.Data) > limit {
		return fmt.Errorf("%w: %s is %d bytes, more than %s (%d)", ErrTooLarge, what, len(b.Data), limitName, limit)
	}
	if b.Type != codec.TypeMsgpack {
		return nil
	}
	body, _, err := codec.Body(b.Data)
	if err == nil && len(body) > limit {
		return fmt.Errorf("%w: %s inflates to %d bytes, more than %s (%d)", ErrTooLarge, what, len(body), limitName, limit)
	}
	if errors.Is(err, codec.ErrTooLarge) {
		// Inflating stopped at codec.MaxSize (MaxListBytes).
		return fmt.Errorf("%w: %s inflates to more than %s (%d bytes): %w", ErrTooLarge, what, limitName, limit, err)
	}
	if err == nil {
		err = codec.Check(body)
	}
	if errors.Is(err, codec.ErrTooLarge) {
		return fmt.Errorf("%w: %s would take more than codec.MaxCost (%d bytes) of memory decoded: %w", ErrTooLarge, what, codec.MaxCost, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %s of type %q: %w", ErrInvalidArgument, what, codec.TypeMsgpack, err)
	}
	return nil
}

// checkPacked checks a value stored packed (a codec envelope around the
// caller's bytes, as an export gives it) as checkBlob checks the bytes
// inside: what it inflates to, within limit, and, for the engine's own
// type, that it reads back. Inflating stops at the limit: a few kilobytes
// claiming gigabytes are refused, not allocated.
func checkPacked(what, typ string, packed []byte, limit int, limitName string) error {
	body, _, err := codec.Body(packed)
	switch {
	case errors.Is(err, codec.ErrTooLarge):
		return fmt.Errorf("%w: %s inflates to more than %s (%d bytes): %w", ErrTooLarge, what, limitName, limit, err)
	case err != nil:
		return fmt.Errorf("%w: %s is not a packed value: %w", ErrInvalidArgument, what, err)
	case len(body) > limit:
		return fmt.Errorf("%w: %s inflates to %d bytes, more than %s (%d)", ErrTooLarge, what, len(body), limitName, limit)
	}
	return checkBlob(what, codec.Blob{Type: typ, Data: body}, limit, limitName)
}
