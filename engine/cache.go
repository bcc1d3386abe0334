package engine

import (
	"bytes"
	"container/list"
	"sync"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine/admin"
)

// History is what one delta channel contributed along the ancestor chain of
// a checkpoint: the nearest stored value (nil: start empty) and the writes
// after it, oldest first.
type History struct {
	Seed   *codec.Blob    `json:"seed,omitempty"`
	Writes []PendingWrite `json:"writes"`
}

type cpKey struct{ thread, ns, id string }

// histEntry is the history of one channel at one checkpoint, plus what the
// checkpoint itself holds for that channel, so that a child's history can be
// derived without reading the file.
type histEntry struct {
	cp      cpKey
	channel string
	hist    History
	version string      // the checkpoint's version of the channel ("" if none)
	holds   *codec.Blob // the value stored for that version, if any
	size    int64
	elem    *list.Element
}

// historyCache memoizes delta histories by (thread, ns, checkpoint,
// channel), and the last value of each channel's version-delta chain by
// (thread, ns, channel) (baseEntry), in one byte budget and one LRU order. A checkpoint's history depends only on its sealed ancestors, so
// entries never go stale; they are dropped only to stay under maxBytes
// (least recently used first) or when their thread is deleted, pruned or
// copied over.
type historyCache struct {
	mu       sync.Mutex
	maxBytes int64
	lru      *list.List // of *histEntry, *baseEntry and *stateEntry
	byCP     map[cpKey]map[string]*histEntry
	byThread map[string]map[cpKey]struct{}
	bases    map[valueKey]*baseEntry
	states   map[cpKey]*stateEntry
	stats    admin.CacheStats
}

func newHistoryCache(maxBytes int64) *historyCache {
	return &historyCache{
		maxBytes: maxBytes, lru: list.New(),
		byCP: map[cpKey]map[string]*histEntry{}, byThread: map[string]map[cpKey]struct{}{},
		bases: map[valueKey]*baseEntry{}, states: map[cpKey]*stateEntry{},
	}
}

const entryOverhead = 128

func (e *histEntry) computeSize() {
	n := int64(entryOverhead + len(e.cp.thread) + len(e.cp.ns) + len(e.cp.id) + len(e.channel))
	if e.hist.Seed != nil {
		n += int64(len(e.hist.Seed.Data) + len(e.hist.Seed.Type))
	}
	if e.holds != nil && e.holds != e.hist.Seed {
		n += int64(len(e.holds.Data))
	}
	for _, w := range e.hist.Writes {
		n += int64(64 + len(w.Value.Data) + len(w.TaskID) + len(w.TaskPath) + len(w.Channel))
	}
	e.size = n
}

func (hc *historyCache) enabled() bool { return hc != nil && hc.maxBytes > 0 }

// tracks reports whether any channel of the checkpoint has an entry, i.e.
// whether a new child's Put should extend it.
func (hc *historyCache) tracks(thread, ns, id string) bool {
	if !hc.enabled() {
		return false
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return len(hc.byCP[cpKey{thread, ns, id}]) > 0
}

func (hc *historyCache) get(k cpKey, channel string) (History, bool) {
	if !hc.enabled() {
		return History{}, false
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	e, ok := hc.byCP[k][channel]
	if !ok {
		hc.stats.Misses++
		return History{}, false
	}
	hc.stats.Hits++
	hc.lru.MoveToFront(e.elem)
	return e.hist, true
}

func (hc *historyCache) add(e *histEntry) {
	if !hc.enabled() {
		return
	}
	e.computeSize()
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if e.size > hc.maxBytes {
		return
	}
	chans := hc.byCP[e.cp]
	if chans == nil {
		chans = map[string]*histEntry{}
		hc.byCP[e.cp] = chans
	}
	if old, ok := chans[e.channel]; ok {
		hc.removeLocked(old)
	}
	chans[e.channel] = e
	th := hc.byThread[e.cp.thread]
	if th == nil {
		th = map[cpKey]struct{}{}
		hc.byThread[e.cp.thread] = th
	}
	th[e.cp] = struct{}{}
	e.elem = hc.lru.PushFront(e)
	hc.stats.Entries++
	hc.stats.Bytes += e.size
	hc.evictLocked()
}

func (hc *historyCache) evictLocked() {
	for hc.stats.Bytes > hc.maxBytes {
		switch last := hc.lru.Back().Value.(type) {
		case *histEntry:
			hc.removeLocked(last)
		case *baseEntry:
			hc.removeBaseLocked(last)
		case *stateEntry:
			hc.removeStateLocked(last)
		}
		hc.stats.Evictions++
	}
}

func (hc *historyCache) removeLocked(e *histEntry) {
	hc.lru.Remove(e.elem)
	chans := hc.byCP[e.cp]
	delete(chans, e.channel)
	if len(chans) == 0 {
		delete(hc.byCP, e.cp)
		if th := hc.byThread[e.cp.thread]; th != nil {
			delete(th, e.cp)
			if len(th) == 0 {
				delete(hc.byThread, e.cp.thread)
			}
		}
	}
	hc.stats.Entries--
	hc.stats.Bytes -= e.size
}

// purgeThread drops every entry of a thread.
func (hc *historyCache) purgeThread(thread string) {
	if !hc.enabled() {
		return
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for k := range hc.byThread[thread] {
		for _, e := range hc.byCP[k] {
			hc.removeLocked(e)
		}
	}
	for k, e := range hc.bases {
		if k.thread == thread {
			hc.removeBaseLocked(e)
		}
	}
	for k, e := range hc.states {
		if k.thread == thread {
			hc.removeStateLocked(e)
		}
	}
}

// extend derives the entries of a new child from its parent's: the child's
// history is the parent's (or, if the parent holds a value, that value) plus
// the parent's writes the child sealed. O(1) file work: nothing is read.
func (hc *historyCache) extend(parent Config, child Checkpoint, newVersions map[string]string, sealed []PendingWrite) {
	hc.mu.Lock()
	var parents []*histEntry
	for _, e := range hc.byCP[cpKey{parent.ThreadID, parent.CheckpointNS, parent.CheckpointID}] {
		parents = append(parents, e)
	}
	hc.stats.Extensions++
	hc.mu.Unlock()
	for _, pe := range parents {
		ch := pe.channel
		var h History
		if pe.holds != nil {
			h.Seed = pe.holds
		} else {
			h.Seed = pe.hist.Seed
			h.Writes = append(h.Writes, pe.hist.Writes...)
		}
		for _, w := range sealed {
			if w.Channel == ch {
				h.Writes = append(h.Writes, w)
			}
		}
		if h.Writes == nil {
			h.Writes = []PendingWrite{}
		}
		e := &histEntry{cp: cpKey{parent.ThreadID, parent.CheckpointNS, child.ID}, channel: ch, hist: h}
		e.version = child.ChannelVersions[ch]
		switch nv, updated := newVersions[ch]; {
		case updated:
			if b, ok := child.ChannelValues[ch]; ok {
				// The caller may reuse its buffer once Put returns.
				e.holds = &codec.Blob{Type: b.Type, Data: bytes.Clone(b.Data)}
			}
			e.version = nv
		case e.version != pe.version:
			// The caller moved the version without listing it as new; do
			// not guess what is stored for it.
			continue
		default:
			e.holds = pe.holds
		}
		hc.add(e)
	}
}

func (hc *historyCache) snapshot() admin.CacheStats {
	if hc == nil {
		return admin.CacheStats{}
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	s := hc.stats
	s.MaxBytes = hc.maxBytes
	return s
}

// CacheStats returns the history cache's counters.
func (db *DB) CacheStats() admin.CacheStats {
	st := db.cache.snapshot()
	st.Enabled = db.opts.HistoryCacheBytes > 0
	return st
}
