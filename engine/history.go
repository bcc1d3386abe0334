package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/codec"
)

// DeltaChannelHistory returns, for each channel, the value to start from and
// the writes to fold onto it to rebuild the channel at the checkpoint cfg
// names (latest if cfg.CheckpointID is empty): the sealed writes of the path
// from the seed ancestor (its own included, the target's excluded), oldest
// first, then by (task_path, task_id, idx), as contract §2.3 walks them.
func (db *DB) DeltaChannelHistory(ctx context.Context, cfg Config, channels []string) (map[string]History, error) {
	if err := validateThread(cfg); err != nil {
		return nil, err
	}
	for _, ch := range channels {
		if err := validateChannel(ch); err != nil {
			return nil, err
		}
	}
	out := make(map[string]History, len(channels))
	if len(channels) == 0 {
		return out, nil
	}
	id := cfg.CheckpointID
	if id != "" {
		all := true
		for _, ch := range channels {
			h, ok := db.cache.get(cpKey{cfg.ThreadID, cfg.CheckpointNS, id}, ch)
			if !ok {
				all = false
				break
			}
			out[ch] = h
		}
		if all {
			return out, nil
		}
	}
	var entries []*histEntry
	err := db.read(ctx, func(c *conn) error {
		if id == "" {
			found, err := c.queryRow(sqlGetLatest, []any{cfg.ThreadID, cfg.CheckpointNS}, func(st row) error {
				id = st.Text(2)
				return nil
			})
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("%w: no checkpoint in thread %q (namespace %q)", ErrNotFound, cfg.ThreadID, cfg.CheckpointNS)
			}
		}
		k := cpKey{cfg.ThreadID, cfg.CheckpointNS, id}
		for _, ch := range channels {
			if h, ok := db.cache.get(k, ch); ok {
				out[ch] = h
				continue
			}
			e, err := walk(c, k, ch)
			if err != nil {
				return err
			}
			out[ch] = e.hist
			entries = append(entries, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		db.cache.add(e)
	}
	return out, nil
}

// walk rebuilds one channel's history at checkpoint k from the file.
func walk(c *conn, k cpKey, ch string) (*histEntry, error) {
	e := &histEntry{cp: k, channel: ch, hist: History{Writes: []PendingWrite{}}}
	var held *valueRead
	found, err := c.queryRow(sqlHolds, []any{ch, k.thread, k.ns, k.id}, func(st row) error {
		e.version = st.Text(0)
		if !st.Null(1) {
			held = &valueRead{key: valueKey{k.thread, k.ns, ch}, version: e.version,
				stored: storedVal{typ: st.Text(1), data: copyBytes(st.Blob(2)), enc: st.Int64(3), base: st.Text(4), owner: st.Text(5)}}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: checkpoint %q of thread %q (namespace %q)", ErrNotFound, k.id, k.thread, k.ns)
	}
	if held != nil {
		if err := readValues(c, []*valueRead{held}); err != nil {
			return nil, err
		}
		e.holds = &codec.Blob{Type: held.stored.typ, Data: held.value}
	}
	var pairs [][2]string
	seed, hasSeed := "", false
	err = c.query(sqlWalk, []any{ch, k.thread, k.ns, k.id}, func(st row) error {
		pairs = append(pairs, [2]string{st.Text(0), st.Text(1)})
		if st.Int64(3) != 0 {
			seed, hasSeed = st.Text(2), true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if hasSeed {
		b, found, err := readValue(c, valueKey{k.thread, k.ns, ch}, seed)
		if err != nil {
			return nil, err
		}
		if found {
			e.hist.Seed = &b
		}
	}
	if len(pairs) > 0 {
		arg, err := jsonArg(pairs)
		if err != nil {
			return nil, err
		}
		var at []int // each write's pair: oldest ancestor first
		err = c.query(sqlWalkWrites, []any{arg, k.thread, k.ns, ch}, func(st row) error {
			data, err := loadWrite(st, 4)
			if err != nil {
				return err
			}
			at = append(at, int(st.Int64(0)))
			e.hist.Writes = append(e.hist.Writes, PendingWrite{
				TaskID: st.Text(1), Idx: int(st.Int64(2)), Channel: ch,
				Value:    codec.Blob{Type: st.Text(3), Data: data},
				TaskPath: st.Text(6),
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
		sortWalkWrites(at, e.hist.Writes)
	}
	return e, nil
}

// sortWalkWrites orders ws (each consumed at pair at[i]) by pair, then as
// sortWrites does.
func sortWalkWrites(at []int, ws []PendingWrite) {
	idx := make([]int, len(ws))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		if c := at[a] - at[b]; c != 0 {
			return c
		}
		x, y := ws[a], ws[b]
		if c := strings.Compare(x.TaskPath, y.TaskPath); c != 0 {
			return c
		}
		if c := strings.Compare(x.TaskID, y.TaskID); c != 0 {
			return c
		}
		return x.Idx - y.Idx
	})
	sorted := make([]PendingWrite, len(ws))
	for i, j := range idx {
		sorted[i] = ws[j]
	}
	copy(ws, sorted)
}
