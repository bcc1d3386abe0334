// The handle's cache of each chain's last value (the base the next
// version's delta is taken against, and where chain reads stop).

package engine

// base returns the cached last value of chain k: this transaction's own
// (a write not yet committed) first, then the handle's.
func (c *conn) base(k valueKey) *baseEntry {
	if e, ok := c.pending[k]; ok {
		return e
	}
	return c.hc.peekBase(k)
}

// remember offers a value to the cache: a write's value waits for its
// transaction to commit (db.write publishes it), a read's goes in at once.
func (c *conn) remember(e *baseEntry) {
	if !c.hc.enabled() {
		return
	}
	if c.d.InTx() && c.writer {
		if c.pending == nil {
			c.pending = map[valueKey]*baseEntry{}
		}
		c.pending[e.key] = e
		return
	}
	c.hc.putBase(e)
}

func (hc *historyCache) peekBase(k valueKey) *baseEntry {
	if !hc.enabled() {
		return nil
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	e := hc.bases[k]
	if e != nil {
		hc.lru.MoveToFront(e.elem)
	}
	return e
}

func (hc *historyCache) countValue(hit bool) {
	if !hc.enabled() {
		return
	}
	hc.mu.Lock()
	if hit {
		hc.stats.ValueHits++
	} else {
		hc.stats.ValueMisses++
	}
	hc.mu.Unlock()
}

func (hc *historyCache) putBase(e *baseEntry) {
	if !hc.enabled() {
		return
	}
	e.size = int64(entryOverhead + len(e.key.thread) + len(e.key.ns) + len(e.key.ch) + len(e.version) + len(e.stamp.owner) + len(e.cv.val.Bytes()))
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if old, ok := hc.bases[e.key]; ok {
		hc.removeBaseLocked(old)
	}
	if e.size > hc.maxBytes {
		return
	}
	hc.bases[e.key] = e
	e.elem = hc.lru.PushFront(e)
	hc.stats.Entries++
	hc.stats.Bytes += e.size
	hc.evictLocked()
}

func (hc *historyCache) removeBaseLocked(e *baseEntry) {
	hc.lru.Remove(e.elem)
	delete(hc.bases, e.key)
	hc.stats.Entries--
	hc.stats.Bytes -= e.size
}

// publish moves a committed transaction's values into the cache.
func (hc *historyCache) publish(pending map[valueKey]*baseEntry) {
	for _, e := range pending {
		hc.putBase(e)
	}
}

// seedHint returns the version of chain k whose value is the nearest stored
// one up the parent links from checkpoint parent, when the cache knows it
// (a baseEntry whose tip is parent), or "". The caller checks that the
// row is still stored; a hint that another handle has made stale (by
// re-putting an ancestor) still names a stored value of the chain, which
// is a sound base: the writer's choice of base is not part of the format.
func (c *conn) seedHint(k valueKey, parent string) string {
	if parent == "" {
		return ""
	}
	if e, ok := c.pending[k]; ok {
		if e.tip == parent {
			return e.version
		}
		return ""
	}
	hc := c.hc
	if !hc.enabled() {
		return ""
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if e := hc.bases[k]; e != nil && e.tip == parent {
		return e.version
	}
	return ""
}

// advanceSeeds moves the cached chains' tips from a committed put's parent
// to the put's checkpoint, for each channel whose nearest stored value the
// checkpoint does not change: it stores no value for the channel, and its
// version is either new (listed in newVersions without a value, so no row
// holds it: checkVersionUnused) or the parent's.
func (hc *historyCache) advanceSeeds(p *put) {
	if !hc.enabled() {
		return
	}
	parent := p.cfg.CheckpointID
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for ch, ver := range p.cp.ChannelVersions {
		nv, listed := p.newVersions[ch]
		if _, stored := p.cp.ChannelValues[ch]; stored && listed {
			continue // its own value, published with itself as the tip
		}
		e := hc.bases[valueKey{p.cfg.ThreadID, p.cfg.CheckpointNS, ch}]
		if e == nil || e.tip != parent {
			continue
		}
		if listed && nv == ver || !listed && ver == e.tipVersion {
			e.tip, e.tipVersion = p.cp.ID, ver
		}
	}
}
