package engine

import (
	"bytes"
	"container/list"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/agentstate/agentstate/codec"
	"github.com/klauspost/compress/zstd"
)

// Version deltas of the checkpoint protocol's channel values.
//
// What is stored. A value that comes in through the protocol (DB.Put, and
// whatever stores through put.run: batches, importers) is stored as a
// codec delta (copy/insert against the previous version, codec.Diff) when
// that is smaller than the value, and whole otherwise, in full and in
// delta mode alike: the modes concern the thread API's message channels.
// The thread API's own values are not diffed: they are snapshots already,
// compressed inside their envelope. Values under 256 bytes stay whole as
// given: a delta's header and a chain to follow cost more than they save.
// Each row of blobs records how it holds its value (enc: as given, packed,
// delta) and, for a delta, the version it applies to (base); nothing is
// inferred from the bytes (migration 0005).
//
// The base is the parent checkpoint's version of the same (thread,
// namespace, channel), read from the parent's row; where the parent stores
// no value for it (LangGraph's DeltaChannel between two snapshots), the
// nearest ancestor's that does (the history walk's seed). The handle
// remembers, for each chain's last value, the newest checkpoint it put
// from which that value is the nearest stored one (baseEntry.tip), so a
// put on that checkpoint takes it without the walk: LangGraph's __start__
// channel, emptied after each input, walked three checkpoints up on every
// turn (a recursive query calling agentstate_version at each step, 0.36 ms
// of a Python turn). Two children of one checkpoint (a fork) each diff
// against the same base.
//
// Whole values. A value is stored whole when it has no base, when the
// delta is not smaller, when 100 deltas already follow the chain's whole
// value, or when the deltas since it would add up to more than its length;
// whole values are packed (one zstd frame in codec's envelope) when that
// saves an eighth. Under the share rule each whole value is about twice as
// long as the one before, so their total is about twice the newest; the
// cap bounds what a cold read follows. BenchmarkPutGrowingList (800
// versions of a LangChain message list in LangGraph.js's json serde; file
// bytes over the bytes of the messages themselves, ms per Put): this
// policy 2.52x, 0.23-0.6 ms; every version whole (the engine before) 403x,
// 1.9-3.7 ms; a cap of 50 3.27x, of 200 2.16x, none 2.01x; share 0.5
// 2.64x, 2 2.54x. Whole values at the file's cadence K (SnapshotEvery, 10)
// instead: 8.56x; with AutoRetain thinning after each, 2.40x but 1.1-2.0
// ms per Put, the thinning scanning the namespace's checkpoints at every
// whole value (a cost that grows with the thread). So K does not govern
// these chains; it stays the thread API's cadence. Reading a head 100
// deltas past its whole value (BenchmarkGetTupleChain, an 880 KB list)
// costs 2.1-2.2x reading a packed whole value of the same bytes without
// a cache (1.2 ms against 0.55: the 100 rows are about 0.45 ms of it, two
// primary-key searches each, and composing and checksumming 0.2) and 0.7x
// once the cache holds it.
//
// The cache. The last value of each chain that a write stored or a read
// rebuilt (a codec.DeltaBase: bytes and checksum) is kept in the history
// cache's byte budget, so that a Put right after the previous Put or read
// diffs without reading the file, and a read of that version, or of one
// after it, starts from it. A write's value is published when its
// transaction commits. A cached value is used only for the row it came from
// (its stamp: owner checkpoint, stored length, a delta's header), so a
// version another handle deleted and stored again is read from the file.
// On a miss the base is rebuilt from the file: 0.95-1.35 ms per Put
// against 0.23-0.6 with the cache, and the same file (storing whole on a
// miss would be the 403x above). HistoryCacheBytes 0 keeps nothing.
//
// Reads rebuild delta values chain by chain: one query brings the links
// from the versions asked for back to the nearest whole (or cached) value,
// with each row's bytes, and codec.PatchChain applies the deltas in one
// pass; versions of one chain asked for together (a List page) are rebuilt
// oldest first, each from the one before. A delta whose base is deleted
// (prune, delete for runs, retention, conversion) is first rebased onto
// the nearest surviving version of its chain, or stored whole
// (deleteValues); retention thins whole values as it thins delta snapshots
// (thinValues); verify rebuilds every value one delta at a time; export
// writes rows as stored (enc, base, the bytes in base64) and import
// restores them, refusing a delta whose base the dump lacks.
//
// The code: this file holds the policy and the write (encodeChannelValue,
// baseFor, pack), valuedelta_cache.go the cache, valuedelta_read.go the
// chain reads, valuedelta_thin.go deleting, rebasing and thinning.

// Encodings of a stored channel value (blobs.enc, migration 0005).
const (
	encPlain  = 0 // the value's bytes as given
	encPacked = 1 // a codec envelope (zstd) around them
	encDelta  = 2 // a codec.DeltaV1 delta against the value of version base
)

// deltaPolicy decides when a value of the protocol is stored whole. It is a
// variable so that the benchmarks can compare policies; the engine never
// changes it.
var deltaPolicy = struct {
	// minValue: values shorter than this are stored whole, as given: a
	// delta's header and the chain a read must follow cost more than the
	// few bytes it saves.
	minValue int
	// maxChain bounds the deltas between a value and the whole value its
	// chain starts from, which bounds the rows a cold read follows.
	maxChain int
	// share: a value is stored whole once the deltas since the last whole
	// value would add up to more than share times that whole value's
	// length. Whole values then grow geometrically, so their total is a
	// small multiple of the newest.
	share float64
	// thinMin: AutoRetain thins a chain after a new whole value only when
	// the whole value the chain started from is at least this long
	// (worthThinning).
	thinMin int
}{minValue: 256, maxChain: 100, share: 1, thinMin: 4 << 10}

// valueKey names a chain: the versions of one channel in one namespace of
// one thread.
type valueKey struct{ thread, ns, ch string }

// chainValue is a value's bytes and where it sits in its chain.
type chainValue struct {
	val   codec.DeltaBase
	depth int   // deltas between it and the whole value its chain starts from
	since int64 // their bytes
	whole int64 // the length of that whole value
}

// baseEntry is the last value of a chain that a write stored or a read
// rebuilt, kept so that the next write diffs against it without reading the
// file and a read of it (or of a version after it) starts from it.
type baseEntry struct {
	key     valueKey
	version string
	stamp   stamp // of the row it was read from or stored as
	enc     int64 // that row's encoding
	cv      chainValue
	size    int64 // in the cache's budget
	elem    *list.Element
	// tip is the newest checkpoint this handle put from which this value
	// is the nearest stored one up the parent links ("" when not known: a
	// read's value), and tipVersion that checkpoint's version of the
	// channel, so that a put on tip takes this value as its base without
	// walking the chain (seedHint). Set by the write that stores the
	// value, moved down by afterPut (advanceSeeds); read and changed under
	// the cache's lock once published.
	tip, tipVersion string
}

// stamp identifies a stored row cheaply, so that a cached value is used
// only for the row it came from: another handle (another process) may have
// deleted the version and stored another value under it since.
type stamp struct {
	owner  string // the checkpoint that stored it
	stored int64  // the stored bytes' length
	head   []byte // their first bytes: a delta's header names its result's length and checksum
}

// stampHead is how many stored bytes a stamp keeps: a delta header is at
// most 19.
const stampHead = 24

func stampOf(sv storedVal) stamp {
	return stamp{owner: sv.owner, stored: int64(len(sv.data)), head: sv.data[:min(len(sv.data), stampHead)]}
}

// holds reports whether e is the value of the row stamped s.
func (e *baseEntry) holds(s stamp) bool {
	if e.stamp.owner != s.owner || e.stamp.stored != s.stored {
		return false
	}
	if e.enc != encDelta {
		return true
	}
	h, err := codec.ReadDeltaHeader(s.head)
	return err == nil && h.Len == len(e.cv.val.Bytes()) && h.Sum == e.cv.val.Sum()
}

func newBaseEntry(k valueKey, version string, sv storedVal, cv chainValue) *baseEntry {
	st := stampOf(sv)
	st.head = bytes.Clone(st.head)
	return &baseEntry{key: k, version: version, stamp: st, enc: sv.enc, cv: cv}
}

// storedVal is a row of blobs as stored.
type storedVal struct {
	typ   string
	enc   int64
	base  string
	owner string
	data  []byte
}

// baseFor finds the value a new version of chain k diffs against: the
// value stored for the parent checkpoint's version pv, or where it stores
// none, for the nearest ancestor's: the cache's hint for the parent
// (seedHint) when it has one whose row is still stored, else the history
// walk's seed. ok is false when there is none.
func baseFor(c *conn, k valueKey, pv, parentID, childID string) (version string, cv chainValue, ok bool, err error) {
	var st stamp
	scan := func(r row, at int) {
		st = stamp{owner: r.Text(at), stored: r.Int64(at + 1), head: r.Blob(at + 2)}
		st.head = bytes.Clone(st.head)
	}
	stampAt := func(version string) (bool, error) {
		return c.queryRow(sqlStamp, []any{k.thread, k.ns, k.ch, version}, func(r row) error {
			scan(r, 0)
			return nil
		})
	}
	found, err := stampAt(pv)
	if err != nil {
		return "", chainValue{}, false, err
	}
	version = pv
	if !found {
		if version = c.seedHint(k, parentID); version != "" {
			if found, err = stampAt(version); err != nil {
				return "", chainValue{}, false, err
			}
		}
	}
	if !found {
		seedWalks.Add(1)
		found, err = c.queryRow(sqlBaseSeed, []any{k.ch, k.thread, k.ns, childID}, func(r row) error {
			version = r.Text(0)
			scan(r, 1)
			return nil
		})
		if err != nil || !found {
			return "", chainValue{}, false, err
		}
	}
	cv, err = readChainValue(c, k, version, st)
	if err != nil {
		return "", chainValue{}, false, err
	}
	return version, cv, true, nil
}

// seedWalks counts the history walks baseFor ran (tests check when the
// cache's hint spared one).
var seedWalks atomic.Int64

// encodeChannelValue chooses how to store value b as version v of chain k, owned
// by checkpoint cpID, given the version of its parent checkpoint (pv, if
// hasPV): a delta against the previous value when that is smaller and the
// chain allows one, otherwise whole (packed when that saves an eighth). The
// new value goes to the cache once the transaction commits.
//
// worth reports a whole value stored where a delta could have been that is
// worth a thinning run of the chain afterwards (worthThinning, AutoRetain).
func encodeChannelValue(c *conn, k valueKey, v, cpID, parentID string, b codec.Blob, pv string, hasPV bool) (sv storedVal, worth bool, err error) {
	next := b.Data
	sv = storedVal{typ: b.Type, enc: encPlain, owner: cpID, data: nonNil(next)}
	if len(next) < deltaPolicy.minValue {
		return sv, false, nil
	}
	keep := c.hc.enabled()
	if keep {
		// The cache outlives the call: it must not share the caller's buffer.
		next = bytes.Clone(next)
	}
	var nb codec.DeltaBase
	var cv chainValue
	if hasPV && pv != v {
		bv, base, ok, err := baseFor(c, k, pv, parentID, cpID)
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrFormatTooNew) {
			// A damaged previous value (or one of a newer build's format)
			// must not stop the thread: the new value does not need it, it
			// is stored whole.
			ok, err = false, nil
		}
		if err != nil {
			return storedVal{}, false, err
		}
		if ok && bv != v {
			smaller := false
			d, n, err := base.val.Diff(nil, next)
			if err == nil {
				d = codec.PackDelta(d)
				nb = n
				cv = chainValue{val: n, depth: base.depth + 1, since: base.since + int64(len(d)), whole: base.whole}
				smaller = len(d) < len(next)
				if smaller && cv.depth <= deltaPolicy.maxChain && float64(cv.since) <= deltaPolicy.share*float64(base.whole) {
					sv.enc, sv.base, sv.data = encDelta, bv, d
				}
			}
			worth = sv.enc != encDelta && worthThinning(base, smaller)
		}
	}
	if sv.enc != encDelta {
		packed, err := pack(next)
		if err != nil {
			return storedVal{}, false, err
		}
		if packed != nil {
			sv.enc, sv.data = encPacked, packed
		}
		if keep {
			if nb.Bytes() == nil {
				nb = codec.NewDeltaBase(next)
			}
			cv = chainValue{val: nb, whole: int64(len(next))}
		}
	}
	if keep {
		e := newBaseEntry(k, v, sv, cv)
		e.tip, e.tipVersion = cpID, v
		c.remember(e)
	}
	return sv, worth, nil
}

// worthThinning reports whether a new whole value, stored after the chain
// value base (whose delta against it would have been smaller when
// smaller), is worth a thinning run (thinValues). A run reads every
// checkpoint and value row of the namespace, O(thread) however little it
// finds, and what it can newly turn into a delta is the whole value base's
// chain started from: base.whole bytes, less that value's own delta.
// So a run waits for a whole value of at least thinMin bytes (a value
// below it stays whole until a run for a larger one of its chain, or an
// explicit Retain, thins it), and for one the chain may have reached by
// deltas: when base is itself whole and the new value's delta against it
// was not smaller, the value changed all at once, and base, whole for the
// same reason as a rule, would not be smaller as a delta either.
func worthThinning(base chainValue, smaller bool) bool {
	if base.whole < int64(deltaPolicy.thinMin) {
		return false
	}
	return smaller || base.depth > 0
}

// pack returns a whole value compressed as the engine compresses delta
// snapshots (a codec zstd envelope, which codec.Body inflates), or nil when
// that saves less than an eighth. It is one frame, not codec's frames per
// list chunk: the bytes are the caller's, not necessarily msgpack, and a
// chain's whole values are too far apart to share chunks. A value shorter
// than codec.CompressMin gets an S2 envelope instead (packSmall).
func pack(v []byte) ([]byte, error) {
	if len(v) < codec.CompressMin {
		return packSmall(v), nil
	}
	enc, err := packEncoder()
	if err != nil {
		return nil, err
	}
	out := enc.EncodeAll(v, append(make([]byte, 0, len(v)/2), codec.FormatV1Zstd))
	if len(out) > len(v)-len(v)/8 {
		return nil, nil
	}
	return out, nil
}

// packSmall returns a caller's bytes in an S2 envelope (codec.PackSmall),
// or nil when that saves less than an eighth: for values stored whole that
// are read often and are too short for zstd's frame to pay (a step's
// input, a pending write of a message).
func packSmall(v []byte) []byte {
	if len(v) < codec.PackMin {
		return nil
	}
	p := codec.PackSmall(append(append(make([]byte, 0, len(v)+1), codec.FormatV1), v...))
	if p[0] != codec.FormatV1S2 {
		return nil
	}
	return p
}

// packEncoder is zstd at the level codec uses for snapshots (codec.Small).
var packEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
})
