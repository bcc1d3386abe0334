package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentstate/agentstate/codec"
)

// Config names a checkpoint: a thread, a namespace inside it ("" is the root
// graph, subgraphs use "node:task_id" segments joined by "|"), and an id. An
// empty CheckpointID means "the latest" when reading and "no parent" when
// putting.
type Config struct {
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
}

// Checkpoint is the state of a graph after one step, as LangGraph defines it.
// ChannelValues holds callers' values as typed blobs, which the engine stores
// without reading them.
type Checkpoint struct {
	V               int                          `json:"v"`
	ID              string                       `json:"id"`
	TS              string                       `json:"ts"`
	ChannelValues   map[string]codec.Blob        `json:"channel_values"`
	ChannelVersions map[string]string            `json:"channel_versions"`
	VersionsSeen    map[string]map[string]string `json:"versions_seen"`
	// UpdatedChannels is nil when absent and sorted when present.
	UpdatedChannels []string `json:"updated_channels"`
}

// Metadata is a checkpoint's free-form metadata. LangGraph uses "source",
// "step", "parents", "run_id" and "counters_since_delta_snapshot"; the
// engine reads only "run_id" (for DeleteForRuns).
type Metadata map[string]any

// Write is one value a task writes to a channel.
type Write struct {
	Channel string     `json:"channel"`
	Value   codec.Blob `json:"value"`
}

// PendingWrite is a stored write: which task wrote what to which channel.
type PendingWrite struct {
	TaskID   string     `json:"task_id"`
	Channel  string     `json:"channel"`
	Value    codec.Blob `json:"value"`
	TaskPath string     `json:"task_path,omitempty"`
	Idx      int        `json:"idx"`
}

// Tuple is a checkpoint with everything needed to resume from it.
type Tuple struct {
	Config        Config         `json:"config"`
	Checkpoint    Checkpoint     `json:"checkpoint"`
	Metadata      Metadata       `json:"metadata"`
	ParentConfig  *Config        `json:"parent_config,omitempty"`
	PendingWrites []PendingWrite `json:"pending_writes"`
}

// Special write channels and the fixed indexes LangGraph gives them.
const (
	ChannelError     = "__error__"
	ChannelScheduled = "__scheduled__"
	ChannelInterrupt = "__interrupt__"
	ChannelResume    = "__resume__"
)

var specialIdx = map[string]int{ChannelError: -1, ChannelScheduled: -2, ChannelInterrupt: -3, ChannelResume: -4}

// storedCheckpoint is the checkpoint row's msgpack payload: everything but
// the id (a column) and the channel values (rows of blobs).
type storedCheckpoint struct {
	V               int                          `msgpack:"v"`
	TS              string                       `msgpack:"ts"`
	ChannelVersions map[string]string            `msgpack:"cv"`
	VersionsSeen    map[string]map[string]string `msgpack:"vs"`
	UpdatedChannels []string                     `msgpack:"uc"`
	HasUpdated      bool                         `msgpack:"hu,omitempty"`
}

func validateThread(cfg Config) error {
	if cfg.ThreadID == "" {
		return fmt.Errorf("%w: missing thread_id", ErrInvalidArgument)
	}
	return validateKeys(cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID)
}

// validateKeys refuses keys that are not UTF-8: reads pass keys to SQLite
// as JSON text (json_each), which cannot carry such bytes, so a value stored
// under one could never be read back.
func validateKeys(keys ...string) error {
	for _, k := range keys {
		if !utf8.ValidString(k) {
			return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidArgument, k)
		}
	}
	return nil
}

// validateChannel refuses names that could not round-trip as keys: empty,
// not UTF-8, or holding control characters.
func validateChannel(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty channel name", ErrInvalidArgument)
	}
	if err := validateKeys(name); err != nil {
		return err
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w: channel name %q holds control characters", ErrInvalidArgument, name)
	}
	return nil
}

// Put stores checkpoint cp as a child of cfg.CheckpointID (empty: a root)
// and returns its config; channels not in newVersions keep their ancestors'
// values. The parent must exist and cp.ID sort after its id. cp seals the
// parent's writes received since its previous child (contract §2.4).
func (db *DB) Put(ctx context.Context, cfg Config, cp Checkpoint, md Metadata, newVersions map[string]string) (Config, error) {
	p, err := preparePutValues(cfg, cp, md, newVersions)
	if err != nil {
		return Config{}, err
	}
	p.wantSealed = cfg.CheckpointID != "" && db.cache.tracks(cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID)
	p.autoRetain = db.opts.AutoRetain
	if err := db.write(ctx, func(c *conn) error { return p.run(c) }); err != nil {
		return Config{}, err
	}
	db.afterPut(p)
	return Config{ThreadID: cfg.ThreadID, CheckpointNS: cfg.CheckpointNS, CheckpointID: cp.ID}, nil
}

// preparePutValues is preparePut for a caller's Put: the values it stores
// are checked against the limits too (the thread API's are checked where
// it encodes them).
func preparePutValues(cfg Config, cp Checkpoint, md Metadata, newVersions map[string]string) (*put, error) {
	p, err := preparePut(cfg, cp, md, newVersions)
	if err != nil {
		return nil, err
	}
	budget := callBudget{what: "Put"}
	for ch := range newVersions {
		if b, ok := cp.ChannelValues[ch]; ok {
			if err := checkBlob(subject{"value of channel", ch, true}, b, MaxListBytes, "MaxListBytes"); err != nil {
				return nil, err
			}
			if err := budget.add(len(b.Data)); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// put is one validated, encoded checkpoint write, run inside a transaction
// by Put and by the thread API.
type put struct {
	cfg         Config
	cp          Checkpoint
	newVersions map[string]string
	payload     []byte
	md          []byte
	runID       any
	noSeal      bool // a copy of the parent's state consumes none of its writes
	trusted     bool // made by the thread API in this transaction: parent loaded, id and versions fresh
	wantSealed  bool // collect the sealed writes for the history cache
	autoRetain  bool // thin a chain's whole values when a new one is stored
	sealed      []PendingWrite
	replaced    bool
}

func preparePut(cfg Config, cp Checkpoint, md Metadata, newVersions map[string]string) (*put, error) {
	if err := validateThread(cfg); err != nil {
		return nil, err
	}
	if cp.ID == "" {
		return nil, fmt.Errorf("%w: checkpoint without id", ErrInvalidArgument)
	}
	if err := validateKeys(cp.ID); err != nil {
		return nil, err
	}
	if cfg.CheckpointID != "" && cp.ID <= cfg.CheckpointID {
		return nil, fmt.Errorf("%w: checkpoint id %q does not sort after its parent %q", ErrInvalidArgument, cp.ID, cfg.CheckpointID)
	}
	for ch, v := range newVersions {
		if err := validateChannel(ch); err != nil {
			return nil, err
		}
		if cv, ok := cp.ChannelVersions[ch]; !ok || cv != v {
			return nil, fmt.Errorf("%w: new version %q of channel %q is not the checkpoint's version %q", ErrInvalidArgument, v, ch, cv)
		}
		if b, ok := cp.ChannelValues[ch]; ok {
			if err := b.Validate(); err != nil {
				return nil, fmt.Errorf("%w: channel %q: %w", ErrInvalidArgument, ch, err)
			}
		}
	}
	for ch, v := range cp.ChannelVersions {
		if err := validateChannel(ch); err != nil {
			return nil, err
		}
		if err := validateKeys(v); err != nil {
			return nil, err
		}
	}
	payload, err := encodeValue("checkpoint (versions and updated channels)", storedCheckpoint{
		V: cp.V, TS: cp.TS, ChannelVersions: cp.ChannelVersions, VersionsSeen: cp.VersionsSeen,
		UpdatedChannels: cp.UpdatedChannels, HasUpdated: cp.UpdatedChannels != nil,
	})
	if err != nil {
		return nil, err
	}
	payload = packCheckpoint(payload)
	mdBytes, err := marshalMetadata(md)
	if err != nil {
		return nil, err
	}
	p := &put{cfg: cfg, cp: cp, newVersions: newVersions, payload: payload, md: mdBytes}
	if s, ok := md["run_id"].(string); ok && s != "" {
		p.runID = s
	}
	return p, nil
}

// packCheckpoint is how a checkpoint row's payload is stored: in an S2
// envelope when that saves an eighth. LangGraph's versions
// ("00000000000000000000000000000042.0.7316...") are most of a checkpoint
// of a small graph, and repeat within it: on LangGraph.js's chat graph the
// rows shrink from 400 to about 200 bytes, and a read inflates one in about
// 0.1 us. Every reader decodes through codec.Unmarshal, which takes any
// envelope; an export writes the value, not its envelope, and an import
// packs it again.
func packCheckpoint(payload []byte) []byte { return codec.PackSmall(payload) }

// storedVersions is the part of a stored checkpoint a put reads from its
// parent.
type storedVersions struct {
	ChannelVersions map[string]string `msgpack:"cv"`
}

// diffs reports whether the put stores a value that may become a delta,
// which needs the parent's versions.
func (p *put) diffs() bool {
	if p.trusted {
		return false
	}
	for ch := range p.newVersions {
		if b, ok := p.cp.ChannelValues[ch]; ok && len(b.Data) >= deltaPolicy.minValue {
			return true
		}
	}
	return false
}

func (p *put) run(c *conn) error {
	cfg, cp := p.cfg, p.cp
	if err := c.lock(cfg.ThreadID); err != nil {
		return err
	}
	var parent any
	if cfg.CheckpointID != "" {
		parent = cfg.CheckpointID
	}
	// The parent's versions name the values new ones diff against.
	var parentVersions map[string]string
	if !p.trusted {
		// The parent (its versions, which new values diff against) and
		// whether this id exists already, in one query.
		var parentFound bool
		var payload []byte
		_, err := c.queryRow(sqlPutTargets, []any{cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID, cp.ID}, func(st row) error {
			parentFound, p.replaced = !st.Null(0), st.Int64(1) != 0
			if parentFound && p.diffs() {
				payload = copyBytes(st.Blob(0))
			}
			return nil
		})
		if err != nil {
			return err
		}
		if cfg.CheckpointID != "" && !parentFound {
			return fmt.Errorf("%w: parent checkpoint %q of thread %q (namespace %q)", ErrNotFound, cfg.CheckpointID, cfg.ThreadID, cfg.CheckpointNS)
		}
		if payload != nil {
			var sv storedVersions
			if err := codec.Unmarshal(payload, &sv); err != nil {
				return fmt.Errorf("%w: checkpoint %q of thread %q: %w", undecodable(err), cfg.CheckpointID, cfg.ThreadID, err)
			}
			parentVersions = sv.ChannelVersions
		}
	}
	if err := c.queue(sqlInsertCheckpoint, cfg.ThreadID, cfg.CheckpointNS, cp.ID, parent, p.runID, p.payload, p.md); err != nil {
		return err
	}
	var thin []string
	for ch, v := range p.newVersions {
		b, ok := cp.ChannelValues[ch]
		if !ok {
			if !p.trusted {
				if err := checkVersionUnused(c, cfg.ThreadID, cfg.CheckpointNS, ch, v, cp.ID); err != nil {
					return err
				}
			}
			continue
		}
		sv := storedVal{typ: b.Type, enc: encPlain, owner: cp.ID, data: nonNil(b.Data)}
		if !p.trusted {
			// The thread API's own values are snapshots already (and
			// compressed in their envelope); the protocol's are stored as
			// version deltas when that is smaller.
			pv, hasPV := parentVersions[ch]
			var err error
			var worth bool
			if sv, worth, err = encodeChannelValue(c, valueKey{cfg.ThreadID, cfg.CheckpointNS, ch}, v, cp.ID, cfg.CheckpointID, b, pv, hasPV); err != nil {
				return err
			}
			if worth && p.autoRetain {
				thin = append(thin, ch)
			}
		}
		if err := putBlob(c, cfg.ThreadID, cfg.CheckpointNS, ch, v, b, sv); err != nil {
			return err
		}
	}
	if len(thin) > 0 {
		// A new whole value may make older ones redundant (AutoRetain).
		if _, _, err := thinValues(c, cfg.ThreadID, cfg.CheckpointNS, func(ch string) bool { return !slices.Contains(thin, ch) }); err != nil {
			return err
		}
	}
	if cfg.CheckpointID == "" || p.noSeal {
		return nil
	}
	if !p.wantSealed {
		return c.queue(sqlSealWrites, cp.ID, cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID)
	}
	// Queued: it travels with the query of what it sealed, whose call
	// reports its error.
	if err := c.queue(sqlSealWrites, cp.ID, cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID); err != nil {
		return err
	}
	return c.query(sqlSealed, []any{cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID, cp.ID}, func(st row) error {
		data, err := loadWrite(st, 4)
		if err != nil {
			return err
		}
		p.sealed = append(p.sealed, PendingWrite{
			TaskID: st.Text(0), Idx: int(st.Int64(1)), Channel: st.Text(2),
			Value:    codec.Blob{Type: st.Text(3), Data: data},
			TaskPath: st.Text(6),
		})
		return nil
	})
}

// afterPut feeds the history cache once the put has committed.
func (db *DB) afterPut(p *put) {
	if p.replaced {
		// A re-put may change a parent link: forget what was derived from it.
		db.purge(p.cfg.ThreadID)
		return
	}
	if !p.trusted && p.cfg.CheckpointID != "" {
		db.cache.advanceSeeds(p)
	}
	if p.wantSealed {
		sortWrites(p.sealed)
		db.cache.extend(p.cfg, p.cp, p.newVersions, p.sealed)
	}
}

// putBlob stores a channel value (b, encoded as sv) once per version. A
// second value for an existing (channel, version) must be the same bytes:
// versions are the key of stored values, so two different values under one
// version would make a later read return the wrong one.
func putBlob(c *conn, thread, ns, ch, version string, b codec.Blob, sv storedVal) error {
	var base any
	if sv.enc == encDelta {
		base = sv.base
	}
	changed, err := c.execN(sqlInsertBlob, thread, ns, ch, version, sv.owner, sv.typ, sv.data, sv.enc, base)
	if err != nil {
		return err
	}
	if changed == 1 {
		return nil
	}
	// The stored one may be a delta: compare values, not rows.
	old, _, err := readValue(c, valueKey{thread, ns, ch}, version)
	if err != nil {
		return err
	}
	if same := old.Type == b.Type && bytes.Equal(old.Data, b.Data); !same {
		return fmt.Errorf("%w: channel %q version %q of thread %q already holds a different value; channel versions must be unique within a thread (forks included)", ErrConflict, ch, version, thread)
	}
	return nil
}

// checkVersionUnused refuses a new version without a value when another
// checkpoint already stored a value under it: reads would take that value for
// this checkpoint's (a fork reusing its sibling's version numbers).
func checkVersionUnused(c *conn, thread, ns, ch, version, cpID string) error {
	var owner string
	found, err := c.queryRow(sqlBlobOwner, []any{thread, ns, ch, version}, func(st row) error {
		owner = st.Text(0)
		return nil
	})
	if err != nil || !found || owner == cpID {
		return err
	}
	return fmt.Errorf("%w: channel %q version %q of thread %q already holds a value stored by checkpoint %q; channel versions must be unique within a thread (forks included)", ErrConflict, ch, version, thread, owner)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func marshalMetadata(md Metadata) ([]byte, error) {
	if md == nil {
		md = Metadata{}
	}
	return encodeValue("metadata", map[string]any(md))
}

// A pending write's bytes are stored as given (enc 0) or, when that saves
// an eighth, in a codec envelope (enc 1: S2, see packSmall), like a whole
// channel value (migration 6). A write of a LangGraph chat is one message,
// 0.4 to 1 KB, read back a few at a time.
func storeWrite(data []byte) (enc int64, stored []byte) {
	if p := packSmall(data); p != nil {
		return encPacked, p
	}
	return encPlain, nonNil(data)
}

// loadWrite returns the bytes of the write in row st whose enc is column
// i and data column i+1, as the caller's own.
func loadWrite(st row, i int) ([]byte, error) {
	switch enc := st.Int64(i); enc {
	case encPlain:
		return copyBytes(st.Blob(i + 1)), nil
	case encPacked:
		body, _, err := codec.Body(st.Blob(i + 1))
		if err != nil {
			return nil, fmt.Errorf("%w: a pending write: %w", undecodable(err), err)
		}
		return body, nil
	default:
		return nil, fmt.Errorf("%w: a pending write stored with unknown encoding %d", ErrCorrupt, enc)
	}
}

// PutWrites stores the writes of one task under the checkpoint the task was
// planned from (cfg.CheckpointID, which must exist). A write's index is its
// position, except for the special channels (__error__ -1, __scheduled__ -2,
// __interrupt__ -3, __resume__ -4). If every write is special the call
// replaces earlier ones; otherwise the first write of a (task, index) wins,
// so retries are idempotent.
func (db *DB) PutWrites(ctx context.Context, cfg Config, writes []Write, taskID, taskPath string) error {
	if err := validateWrites(cfg, writes, taskID); err != nil {
		return err
	}
	return db.write(ctx, func(c *conn) error { return putWritesTx(c, cfg, writes, taskID, taskPath, nil, false) })
}

// PutWithWrites is Put and PutWrites of tasks under cp in one transaction.
func (db *DB) PutWithWrites(ctx context.Context, cfg Config, cp Checkpoint, md Metadata, newVersions map[string]string, tasks [][]PendingWrite) (refused []error, err error) {
	p, err := preparePutValues(cfg, cp, md, newVersions)
	if err != nil {
		return nil, err
	}
	// Each task's writes are checked as PutWrites checks them; one refused
	// here is not stored and does not stop the others (nor the put).
	child := Config{ThreadID: cfg.ThreadID, CheckpointNS: cfg.CheckpointNS, CheckpointID: cp.ID}
	refused = make([]error, len(tasks))
	writes := make([][]Write, len(tasks))
	for k, t := range tasks {
		if len(t) == 0 {
			refused[k] = fmt.Errorf("%w: a task without writes", ErrInvalidArgument)
			continue
		}
		ws := make([]Write, len(t))
		for i, w := range t {
			ws[i] = Write{Channel: w.Channel, Value: w.Value}
		}
		if refused[k] = validateWrites(child, ws, t[0].TaskID); refused[k] == nil {
			writes[k] = ws
		}
	}
	p.wantSealed = cfg.CheckpointID != "" && db.cache.tracks(cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID)
	p.autoRetain = db.opts.AutoRetain
	err = db.write(ctx, func(c *conn) error {
		if err := p.run(c); err != nil {
			return err
		}
		for k, ws := range writes {
			// known: the checkpoint was inserted by this transaction.
			if ws != nil {
				if err := putWritesTx(c, child, ws, tasks[k][0].TaskID, tasks[k][0].TaskPath, nil, true); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	db.afterPut(p)
	return refused, nil
}

func validateWrites(cfg Config, writes []Write, taskID string) error {
	if err := validateThread(cfg); err != nil {
		return err
	}
	if cfg.CheckpointID == "" {
		return fmt.Errorf("%w: writes need a checkpoint_id", ErrInvalidArgument)
	}
	if taskID == "" {
		return fmt.Errorf("%w: writes need a task_id", ErrInvalidArgument)
	}
	budget := callBudget{what: "PutWrites"}
	for _, w := range writes {
		if err := validateChannel(w.Channel); err != nil {
			return err
		}
		if err := budget.add(len(w.Value.Data)); err != nil {
			return err
		}
		if err := w.Value.Validate(); err != nil {
			return fmt.Errorf("%w: write to %q: %w", ErrInvalidArgument, w.Channel, err)
		}
		if err := checkBlob(subject{"write to", w.Channel, true}, w.Value, MaxValueBytes, "MaxValueBytes"); err != nil {
			return err
		}
	}
	return nil
}

// putWritesTx stores validated writes; runID tags writes a run of the thread
// API made (nil for LangGraph's writes), which rollback uses; known says the
// caller has just read the checkpoint in this transaction.
func putWritesTx(c *conn, cfg Config, writes []Write, taskID, taskPath string, runID any, known bool) error {
	if err := c.lock(cfg.ThreadID); err != nil {
		return err
	}
	allSpecial := len(writes) > 0
	for _, w := range writes {
		if _, ok := specialIdx[w.Channel]; !ok {
			allSpecial = false
		}
	}
	q := sqlInsertWriteFirst
	if allSpecial {
		q = sqlInsertWriteReplace
	}
	if !known {
		found, err := c.queryRow(sqlCheckpointExists, []any{cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID}, nil)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: checkpoint %q of thread %q (namespace %q)", ErrNotFound, cfg.CheckpointID, cfg.ThreadID, cfg.CheckpointNS)
		}
	}
	for i, w := range writes {
		idx, ok := specialIdx[w.Channel]
		if !ok {
			idx = i
		}
		enc, data := storeWrite(w.Value.Data)
		if err := c.queue(q, cfg.ThreadID, cfg.CheckpointNS, cfg.CheckpointID, taskID, idx, w.Channel, w.Value.Type, enc, data, taskPath, runID); err != nil {
			return err
		}
	}
	return nil
}

// sortWrites orders writes as live execution applies them: by task path,
// task id (code point order, which Go's byte-wise string order is for UTF-8)
// and index.
func sortWrites(ws []PendingWrite) {
	slices.SortStableFunc(ws, func(a, b PendingWrite) int {
		if c := strings.Compare(a.TaskPath, b.TaskPath); c != 0 {
			return c
		}
		if c := strings.Compare(a.TaskID, b.TaskID); c != 0 {
			return c
		}
		return a.Idx - b.Idx
	})
}
