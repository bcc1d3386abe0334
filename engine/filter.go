package engine

import (
	"encoding/json"
	"fmt"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/internal/driver"
)

// filterTerm is one condition of an encoded filter: a path into the
// metadata map and the value found there must equal.
type filterTerm struct {
	Path  []string `msgpack:"p"`
	Value any      `msgpack:"v"`
}

// encodeFilter validates every key and encodes the filter as one bound
// parameter for agentstate_meta_match.
func encodeFilter(f map[string]any) ([]byte, error) {
	terms := make([]filterTerm, 0, len(f))
	for k, v := range f {
		path, err := splitFilterKey(k)
		if err != nil {
			return nil, err
		}
		terms = append(terms, filterTerm{Path: path, Value: v})
	}
	b, err := codec.Marshal(terms)
	if err != nil {
		return nil, fmt.Errorf("%w: filter value: %w", ErrInvalidArgument, err)
	}
	return b, nil
}

// metaMatchFunc(metadata, filter) is 1 when every term of the encoded filter
// equals the metadata value at its path, 0 otherwise (also for metadata
// that does not decode: it matches nothing rather than failing the query).
func metaMatchFunc(_ *any, arg []driver.Value) (any, error) {
	var terms []filterTerm
	if err := codec.Unmarshal(arg[1].Blob(), &terms); err != nil {
		return nil, fmt.Errorf("agentstate: bad filter: %w", err)
	}
	var md map[string]any
	if err := codec.Unmarshal(arg[0].Blob(), &md); err != nil {
		return false, nil
	}
	return matchTerms(md, terms), nil
}

func matchTerms(md map[string]any, terms []filterTerm) bool {
	for _, t := range terms {
		v, ok := lookupPath(md, t.Path)
		if !ok || !deepEqualValues(v, t.Value, false) {
			return false
		}
	}
	return true
}

func lookupPath(m map[string]any, path []string) (any, bool) {
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// versionFunc(checkpoint, channel) is the version of channel recorded in a
// stored checkpoint, or NULL. The history walk uses it to decide whether an
// ancestor holds a value for the channel.
func versionFunc(_ *any, arg []driver.Value) (any, error) {
	var sc struct {
		ChannelVersions map[string]string `msgpack:"cv"`
	}
	if err := codec.Unmarshal(arg[0].Blob(), &sc); err != nil {
		return nil, nil
	}
	v, ok := sc.ChannelVersions[arg[1].Text()]
	if !ok {
		return nil, nil
	}
	return v, nil
}

// jsonArg encodes a list of keys as one JSON text parameter for json_each.
func jsonArg(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
