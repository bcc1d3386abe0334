package engine

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/agentstate/agentstate/codec"
)

// idGen makes the checkpoint ids of the thread API: UUIDv7 text (RFC 9562),
// whose lexical order is creation order. A 12-bit sequence makes ids from
// one handle strictly increasing within a millisecond, and an id never
// sorts at or before the parent it is made for, even if the clock went back.
type idGen struct {
	mu  sync.Mutex
	ms  int64
	seq int
}

func (g *idGen) next(now time.Time, after string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	ms := now.UnixMilli()
	if pms, pseq, ok := parseUUIDv7(after); ok && (pms > g.ms || pms == g.ms && pseq > g.seq) {
		g.ms, g.seq = pms, pseq // never sort at or before the parent
	}
	if ms <= g.ms {
		ms = g.ms
		g.seq++
		if g.seq > 0xfff {
			ms++
			g.seq = 0
		}
	} else {
		g.seq = 0
	}
	g.ms = ms
	id := formatUUIDv7(ms, g.seq)
	if id <= after {
		// The parent is not one of our ids and sorts after any time-based
		// id (a foreign format): extend it instead.
		return after + "." + strconv.FormatInt(ms, 36) + strconv.Itoa(g.seq)
	}
	return id
}

func formatUUIDv7(ms int64, seq int) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(ms)<<16|0x7000|uint64(seq&0xfff))
	rand.Read(b[8:])
	b[8] = b[8]&0x3f | 0x80
	return codec.UUIDText(b)
}

// parseUUIDv7 reads the time and sequence of an id made by formatUUIDv7.
func parseUUIDv7(id string) (ms int64, seq int, ok bool) {
	if len(id) != 36 || id[14] != '7' {
		return 0, 0, false
	}
	var b [8]byte
	if _, err := hex.Decode(b[0:4], []byte(id[0:8])); err != nil {
		return 0, 0, false
	}
	if _, err := hex.Decode(b[4:6], []byte(id[9:13])); err != nil {
		return 0, 0, false
	}
	if _, err := hex.Decode(b[6:8], []byte(id[14:18])); err != nil {
		return 0, 0, false
	}
	v := binary.BigEndian.Uint64(b[:])
	return int64(v >> 16), int(v & 0xfff), true
}

// versionOf is the channel version the thread API gives values changed by
// checkpoint id: the id's time, sequence and 16 random bits as 20 hex
// digits. Versions only need to be unique within a thread (forks included)
// and they are stored in every checkpoint, so they are kept short.
func versionOf(id string) string {
	if _, _, ok := parseUUIDv7(id); !ok {
		return id
	}
	return id[0:8] + id[9:13] + id[14:18] + id[19:23]
}
