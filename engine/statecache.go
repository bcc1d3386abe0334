package engine

import (
	"container/list"
	"sync"
)

// stateCache keeps the materialized state of recently used checkpoints of
// the thread API, so committing the next step and reading the head do not
// decode and fold the history again. Like the history cache, an entry never
// goes stale: a checkpoint's state never changes. Values in it are shared
// and must never be modified; readers get copies (cloneValues).
type stateCache struct {
	mu  sync.Mutex
	max int
	lru *list.List
	m   map[cpKey]*list.Element
}

type stateEntry struct {
	k cpKey
	v map[string]any
}

// stateCacheEntries bounds the state cache. Heads are what it is for; a
// handful per thread in use is plenty.
const stateCacheEntries = 256

// stateCacheSize is 0 (off) when the history cache is off, so that a handle
// without caches always rebuilds state from the file.
func stateCacheSize(o Options) int {
	if o.HistoryCacheBytes == 0 {
		return 0
	}
	return stateCacheEntries
}

func newStateCache(max int) *stateCache {
	return &stateCache{max: max, lru: list.New(), m: map[cpKey]*list.Element{}}
}

func (sc *stateCache) get(k cpKey) (map[string]any, bool) {
	if sc.max == 0 {
		return nil, false
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e, ok := sc.m[k]
	if !ok {
		return nil, false
	}
	sc.lru.MoveToFront(e)
	return e.Value.(*stateEntry).v, true
}

func (sc *stateCache) add(k cpKey, v map[string]any) {
	if v == nil || sc.max == 0 {
		return
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if e, ok := sc.m[k]; ok {
		sc.lru.MoveToFront(e)
		return
	}
	sc.m[k] = sc.lru.PushFront(&stateEntry{k, v})
	for sc.lru.Len() > sc.max {
		last := sc.lru.Back()
		sc.lru.Remove(last)
		delete(sc.m, last.Value.(*stateEntry).k)
	}
}

func (sc *stateCache) purgeThread(thread string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	for k, e := range sc.m {
		if k.thread == thread {
			sc.lru.Remove(e)
			delete(sc.m, k)
		}
	}
}

// purge forgets everything the caches derived from a thread, after a call
// that deleted or rewrote some of it.
func (db *DB) purge(thread string) {
	db.cache.purgeThread(thread)
	db.states.purgeThread(thread)
}
