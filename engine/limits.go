package engine

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/agentstate/agentstate/codec"
)

// Limits of what a call may store, so that everything the engine accepts
// reads back through every reader (the "limits" row of docs/storage.md gives
// the reasons). Each is checked before anything is written and refused with
// ErrTooLarge naming the limit and the argument; nesting past
// codec.MaxDepth is ErrInvalidArgument.
const (
	// MaxValueBytes bounds one value a call stores, as msgpack: metadata,
	// a pending write, an event's content, a store value, a record's
	// metadata. A message (MaxMessageBytes) shares its write's.
	MaxValueBytes   = 16 << 20
	MaxMessageBytes = MaxValueBytes
	// MaxListBytes (codec.MaxSize) bounds a channel's value at one
	// checkpoint before compression; Compact a thread whose list reaches it.
	MaxListBytes = codec.MaxSize
	// MaxRowBytes bounds one stored row: a channel value and small columns.
	MaxRowBytes = MaxListBytes + 1<<20
	// MaxCallBytes bounds what one call writes in all. Import, Batch and
	// ConvertFile are not bound by it: past about 150 MiB of large values
	// they fail with ErrTooLarge, changing nothing.
	MaxCallBytes = 128 << 20
	// MaxImportLineBytes bounds one line of an export that Import reads.
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

// subject names what a check is about, as "what" or `what "name"`; its
// text is made only for an error (a put checks every channel it writes).
type subject struct {
	what, name string
	named      bool
}

func (s subject) String() string {
	if !s.named {
		return s.what
	}
	return s.what + " " + strconv.Quote(s.name)
}

// checkBlob checks a payload a caller gives as bytes (LangGraph's serde
// output) against limit, and, when its type says it is the engine's own
// msgpack, that it reads back.
func checkBlob(what subject, b codec.Blob, limit int, limitName string) error {
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
	return checkBlob(subject{what: what}, codec.Blob{Type: typ, Data: body}, limit, limitName)
}
