package engine

import (
	"errors"
	"maps"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// storedCheckpoint is encoded and decoded by hand as the msgpack library's
// reflection does it (a map of the tagged names in field order, "hu" left
// out when false), but for the order of "vs"'s keys, now sorted;
// TestStoredCheckpointCodecIsReflection holds both ways to it. Every put
// writes one and every read decodes one, and the reflective path's first
// use (the struct's field cache, its tag parser) was 8 ms of the first put
// and getTuple in the js build.
var (
	_ msgpack.CustomEncoder = storedCheckpoint{}
	_ msgpack.CustomDecoder = (*storedCheckpoint)(nil)
)

// EncodeMsgpack implements msgpack.CustomEncoder.
func (sc storedCheckpoint) EncodeMsgpack(enc *msgpack.Encoder) error {
	n := 5
	if sc.HasUpdated {
		n = 6
	}
	if err := enc.EncodeMapLen(n); err != nil {
		return err
	}
	if err := enc.EncodeString("v"); err != nil {
		return err
	}
	if err := enc.EncodeInt(int64(sc.V)); err != nil {
		return err
	}
	if err := enc.EncodeString("ts"); err != nil {
		return err
	}
	if err := enc.EncodeString(sc.TS); err != nil {
		return err
	}
	if err := enc.EncodeString("cv"); err != nil {
		return err
	}
	if err := enc.Encode(sc.ChannelVersions); err != nil {
		return err
	}
	if err := enc.EncodeString("vs"); err != nil {
		return err
	}
	if err := encodeVersionsSeen(enc, sc.VersionsSeen); err != nil {
		return err
	}
	if err := enc.EncodeString("uc"); err != nil {
		return err
	}
	if err := enc.Encode(sc.UpdatedChannels); err != nil {
		return err
	}
	if sc.HasUpdated {
		if err := enc.EncodeString("hu"); err != nil {
			return err
		}
		return enc.EncodeBool(true)
	}
	return nil
}

// encodeVersionsSeen writes the nested map with its keys sorted, as the
// inner maps are: the library's reflection writes a map of maps in Go's
// random order, so that equal checkpoints could differ in bytes.
func encodeVersionsSeen(enc *msgpack.Encoder, m map[string]map[string]string) error {
	if m == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeMapLen(len(m)); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := enc.EncodeString(k); err != nil {
			return err
		}
		if err := enc.Encode(m[k]); err != nil {
			return err
		}
	}
	return nil
}

var errCheckpointArray = errors.New("msgpack: number of fields in array-encoded struct has changed")

// DecodeMsgpack implements msgpack.CustomDecoder: a map in any order
// (unknown keys skipped), nil for the zero value, or the array form the
// library also reads; each field decoded as reflection decodes it.
func (sc *storedCheckpoint) DecodeMsgpack(dec *msgpack.Decoder) error {
	c, err := dec.PeekCode()
	if err != nil {
		return err
	}
	switch {
	case c == msgpcode.Nil:
		*sc = storedCheckpoint{}
		return dec.DecodeNil()
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		// The library reads a struct from an array of all its fields too.
		n, err := dec.DecodeArrayLen()
		if err != nil {
			return err
		}
		if n == 0 {
			*sc = storedCheckpoint{}
			return nil
		}
		if n != 6 {
			return errCheckpointArray
		}
		for _, k := range [...]string{"v", "ts", "cv", "vs", "uc", "hu"} {
			if err := sc.decodeField(dec, k); err != nil {
				return err
			}
		}
		return nil
	}
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	for range n {
		k, err := dec.DecodeString()
		if err != nil {
			return err
		}
		if err := sc.decodeField(dec, k); err != nil {
			return err
		}
	}
	return nil
}

func (sc *storedCheckpoint) decodeField(dec *msgpack.Decoder, k string) error {
	var err error
	switch k {
	case "v":
		var v int64
		v, err = dec.DecodeInt64()
		sc.V = int(v)
	case "ts":
		sc.TS, err = dec.DecodeString()
	case "cv":
		err = dec.Decode(&sc.ChannelVersions)
	case "vs":
		err = dec.Decode(&sc.VersionsSeen)
	case "uc":
		err = dec.Decode(&sc.UpdatedChannels)
	case "hu":
		sc.HasUpdated, err = dec.DecodeBool()
	default:
		err = dec.Skip()
	}
	return err
}
