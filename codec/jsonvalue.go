package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DecodeJSON decodes one JSON document into the shapes Unmarshal gives a
// msgpack value: maps as map[string]any, lists as []any, integers as int64
// (uint64 only above the int64 range), other numbers as float64. A number
// outside float64's range and data after the value are errors.
func DecodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the JSON value")
	}
	return JSONNumbers(v)
}

// JSONNumbers replaces, in place, the json.Number values inside a value
// decoded with UseNumber by the numbers DecodeJSON gives, and returns it.
func JSONNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return n, nil
			}
			if n, err := strconv.ParseUint(s, 10, 64); err == nil {
				return n, nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("number %s: %w", s, err)
		}
		return f, nil
	case map[string]any:
		for k, e := range x {
			n, err := JSONNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	case []any:
		for i, e := range x {
			n, err := JSONNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	}
	return v, nil
}
