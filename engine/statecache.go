package engine

import (
	"container/list"

	"github.com/agentstate/agentstate/codec"
)

// The state cache keeps the materialized state of recently used
// checkpoints of the thread API, so committing the next step and reading
// the head do not decode and fold the history again. Like the history
// cache, an entry never goes stale: a checkpoint's state never changes.
// Values in it are shared and must never be modified; readers get copies
// (cloneValues).
//
// Its entries live in the history cache, in the same byte budget
// (Options.HistoryCacheBytes) and the same LRU order, each counted at an
// estimate of the memory its values take (stateSize): a state of a long
// thread is tens of megabytes, and a cache of a fixed number of them (256,
// before) grew to gigabytes on a StateHistory walk. With the history cache
// off (HistoryCacheBytes 0) no state is kept.
type stateEntry struct {
	k    cpKey
	v    map[string]any
	size int64
	elem *list.Element
}

func (hc *historyCache) getState(k cpKey) (map[string]any, bool) {
	if !hc.enabled() {
		return nil, false
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	e, ok := hc.states[k]
	if !ok {
		return nil, false
	}
	hc.lru.MoveToFront(e.elem)
	return e.v, true
}

func (hc *historyCache) addState(k cpKey, v map[string]any) {
	if v == nil || !hc.enabled() {
		return
	}
	size := int64(entryOverhead + len(k.thread) + len(k.ns) + len(k.id))
	for name, x := range v {
		size += int64(len(name)) + valueSize(x)
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if e, ok := hc.states[k]; ok {
		hc.lru.MoveToFront(e.elem)
		return
	}
	if size > hc.maxBytes {
		return
	}
	e := &stateEntry{k: k, v: v, size: size}
	e.elem = hc.lru.PushFront(e)
	hc.states[k] = e
	hc.stats.StateEntries++
	hc.stats.StateBytes += size
	hc.stats.Bytes += size
	hc.evictLocked()
}

func (hc *historyCache) removeStateLocked(e *stateEntry) {
	hc.lru.Remove(e.elem)
	delete(hc.states, e.k)
	hc.stats.StateEntries--
	hc.stats.StateBytes -= e.size
	hc.stats.Bytes -= e.size
}

// valueSize estimates the memory a decoded value takes: Go's sizes of its
// headers (16 bytes an interface or string, 24 a slice, a Message's 144)
// plus its strings' bytes and a map's entries. Strings that states share
// are counted in each, so it errs high.
func valueSize(x any) int64 {
	switch v := x.(type) {
	case nil:
		return 16
	case string:
		return 16 + int64(len(v))
	case []byte:
		return 40 + int64(len(v))
	case []any:
		n := int64(40)
		for _, e := range v {
			n += valueSize(e)
		}
		return n
	case map[string]any:
		n := int64(48)
		for k, e := range v {
			n += 16 + int64(len(k)) + valueSize(e) // plus the entry's share of the buckets
		}
		return n
	case []codec.Message:
		n := int64(40)
		for i := range v {
			n += messageSize(&v[i])
		}
		return n
	case codec.Message:
		return 16 + messageSize(&v)
	}
	return 32 // numbers, booleans, times: an interface and a small box
}

func messageSize(m *codec.Message) int64 {
	n := int64(144 + len(m.ID) + len(m.Type) + len(m.Name) + len(m.ToolCallID))
	n += valueSize(m.Content)
	for _, tc := range m.ToolCalls {
		n += 56 + int64(len(tc.ID)+len(tc.Name)) + valueSize(tc.Args)
	}
	if m.AdditionalKwargs != nil {
		n += valueSize(m.AdditionalKwargs)
	}
	if m.ResponseMetadata != nil {
		n += valueSize(m.ResponseMetadata)
	}
	if m.UsageMetadata != nil {
		n += 24
	}
	return n
}

// purge forgets everything the caches derived from a thread, after a call
// that deleted or rewrote some of it.
func (db *DB) purge(thread string) {
	db.cache.purgeThread(thread)
}
