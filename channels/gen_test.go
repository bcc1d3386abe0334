package channels

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentstate/agentstate/codec"
)

var seedFlag = flag.Uint64("channels.seed", 0, "seed for the property tests (0: time-based, printed)")

// propertySeed returns the run's base seed and logs it, so that a failure
// prints the one command that replays it.
func propertySeed(t *testing.T) uint64 {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("replay with: go test ./channels -run '^%s$' -channels.seed=%d", t.Name(), seed)
	return seed
}

// gen produces random message states and writes over a small id pool, so
// that replacements, duplicates inside a write, removals of present and
// absent ids, remove-all and Overwrite all occur often.
type gen struct {
	r    *rand.Rand
	pool []string
	n    int // content counter: every generated message is distinguishable
}

func newGen(seed, stream uint64) *gen {
	r := rand.New(rand.NewPCG(seed, stream))
	pool := make([]string, 4+r.IntN(12))
	for i := range pool {
		pool[i] = fmt.Sprintf("m%d", i)
	}
	return &gen{r: r, pool: pool}
}

func (g *gen) id() string { return g.pool[g.r.IntN(len(g.pool))] }

func (g *gen) msg(id string) codec.Message {
	g.n++
	types := []string{codec.Human, codec.AI, codec.System}
	return codec.Message{ID: id, Type: types[g.r.IntN(len(types))], Content: fmt.Sprintf("%s#%d", id, g.n)}
}

func remove(id string) codec.Message { return codec.Message{ID: id, Type: codec.Remove} }

// list returns up to n messages; with dups, ids may repeat, as a seed
// written by another program (or an Overwrite) may hold them.
func (g *gen) list(n int, dups bool) []codec.Message {
	out := make([]codec.Message, 0, n)
	seen := map[string]bool{}
	for range n {
		id := g.id()
		if seen[id] && !dups {
			continue
		}
		seen[id] = true
		out = append(out, g.msg(id))
	}
	return out
}

// write returns one write that is mostly valid against cur, the list the
// write will be folded into.
func (g *gen) write(cur []codec.Message) MessageUpdate {
	if g.r.IntN(100) < 7 {
		return MessageUpdate{Overwrite: true, Messages: g.list(g.r.IntN(6), g.r.IntN(4) == 0)}
	}
	present := []string{}
	for _, m := range cur {
		present = append(present, m.ID)
	}
	var ms []codec.Message
	var inWrite, removed []string
	for range g.r.IntN(7) {
		switch p := g.r.IntN(100); {
		case p < 35: // add or replace
			id := g.id()
			ms = append(ms, g.msg(id))
			inWrite = append(inWrite, id)
		case p < 60 && len(present)+len(inWrite) > 0: // remove a present id
			all := append(append([]string{}, present...), inWrite...)
			id := all[g.r.IntN(len(all))]
			ms = append(ms, remove(id))
			removed = append(removed, id)
		case p < 64: // remove any id, maybe unknown
			ms = append(ms, remove(g.id()))
		case p < 69: // remove everything so far
			ms = append(ms, remove(codec.RemoveAll))
			present, inWrite = nil, nil
		case p < 80 && len(removed) > 0: // remove, then re-add in one write
			id := removed[g.r.IntN(len(removed))]
			ms = append(ms, g.msg(id))
			inWrite = append(inWrite, id)
		case p < 92 && len(inWrite) > 0: // duplicate id inside the write
			id := inWrite[g.r.IntN(len(inWrite))]
			ms = append(ms, g.msg(id))
		case p < 94 && g.r.IntN(10) == 0: // a message that was never given an id
			ms = append(ms, codec.Message{Type: codec.Human, Content: "no id"})
		default:
			ms = append(ms, g.msg(g.id()))
		}
	}
	return MessageUpdate{Messages: ms}
}

// sequence returns a state and up to n writes. It simulates the fold while
// generating, so that removals usually name present ids; when a write turns
// out to fail it is kept as the last one, so error paths are tested too.
func (g *gen) sequence(n int) ([]codec.Message, []MessageUpdate) {
	state := g.list(g.r.IntN(10), g.r.IntN(5) == 0)
	cur := state
	var writes []MessageUpdate
	for range g.r.IntN(n + 1) {
		w := g.write(cur)
		writes = append(writes, w)
		next, err := naiveOne(cur, w)
		if err != nil {
			break
		}
		cur = next
	}
	return state, writes
}

// sameError reports whether two fold errors agree: both nil, or both
// matching the same sentinel.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	for _, s := range []error{ErrUnknownID, ErrNoID, ErrBadValue} {
		if errors.Is(a, s) {
			return errors.Is(b, s)
		}
	}
	return false
}
