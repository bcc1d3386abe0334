// Ranking of store vectors: a query's scorer (cosine, inner product, l2)
// and the bounded best-first set a search keeps while it scans.

package engine

import (
	"math"
	"slices"
)

// vecScorer scores stored vectors against one query.
type vecScorer struct {
	q     []float32
	qnorm float64
	dist  vecDistance
}

func newVecScorer(q []float32, d vecDistance) vecScorer {
	var n float64
	for _, f := range q {
		n += float64(f) * float64(f)
	}
	return vecScorer{q: q, qnorm: math.Sqrt(n), dist: d}
}

// vecNorm is v's Euclidean norm.
func vecNorm(v []float32) float64 {
	var n0, n1, n2, n3 float32
	i := 0
	for ; i+4 <= len(v); i += 4 {
		n0, n1, n2, n3 = n0+v[i]*v[i], n1+v[i+1]*v[i+1], n2+v[i+2]*v[i+2], n3+v[i+3]*v[i+3]
	}
	for ; i < len(v); i++ {
		n0 += v[i] * v[i]
	}
	return math.Sqrt(float64(n0 + n1 + n2 + n3))
}

// score returns v's score (norm is v's norm, which cosine needs), and
// false when v cannot be compared with the query (another number of
// dimensions).
func (s *vecScorer) score(v []float32, norm float64) (float64, bool) {
	q := s.q
	if len(v) != len(q) {
		return 0, false
	}
	v = v[:len(q)]
	var d0, d1, d2, d3 float32
	i := 0
	if s.dist == distL2 {
		for ; i+4 <= len(q); i += 4 {
			e0, e1, e2, e3 := v[i]-q[i], v[i+1]-q[i+1], v[i+2]-q[i+2], v[i+3]-q[i+3]
			d0, d1, d2, d3 = d0+e0*e0, d1+e1*e1, d2+e2*e2, d3+e3*e3
		}
		for ; i < len(q); i++ {
			e := v[i] - q[i]
			d0 += e * e
		}
		return -math.Sqrt(float64(d0 + d1 + d2 + d3)), true
	}
	for ; i+4 <= len(q); i += 4 {
		d0, d1, d2, d3 = d0+v[i]*q[i], d1+v[i+1]*q[i+1], d2+v[i+2]*q[i+2], d3+v[i+3]*q[i+3]
	}
	for ; i < len(q); i++ {
		d0 += v[i] * q[i]
	}
	dot := float64(d0 + d1 + d2 + d3)
	if s.dist == distInner {
		return dot, true
	}
	n := norm * s.qnorm
	if n == 0 {
		return 0, true // a zero vector is like nothing
	}
	return dot / n, true
}

// topK keeps the k best items seen, an item counted once at its best score.
type topK struct {
	k    int
	h    []scored // a min-heap on (score, then later items lower)
	seen map[int64]int
}

type scored struct {
	score float64
	item  int64
}

// worse orders the heap: the lower score, and among equal scores the later
// item, goes first out.
func (a scored) worse(b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.item > b.item
}

func newTopK(k int) *topK { return &topK{k: k, h: make([]scored, 0, k), seen: make(map[int64]int, k)} }

func (t *topK) add(item int64, score float64) {
	s := scored{score, item}
	if i, ok := t.seen[item]; ok {
		if t.h[i].score < score {
			t.h[i].score = score
			t.down(i)
		}
		return
	}
	if len(t.h) < t.k {
		t.h = append(t.h, s)
		t.seen[item] = len(t.h) - 1
		t.up(len(t.h) - 1)
		return
	}
	if t.k == 0 || !t.h[0].worse(s) {
		return
	}
	delete(t.seen, t.h[0].item)
	t.h[0] = s
	t.seen[item] = 0
	t.down(0)
}

func (t *topK) swap(i, j int) {
	t.h[i], t.h[j] = t.h[j], t.h[i]
	t.seen[t.h[i].item], t.seen[t.h[j].item] = i, j
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.h[i].worse(t.h[p]) {
			return
		}
		t.swap(i, p)
		i = p
	}
}

func (t *topK) down(i int) {
	for {
		l, m := 2*i+1, i
		if l < len(t.h) && t.h[l].worse(t.h[m]) {
			m = l
		}
		if r := l + 1; r < len(t.h) && t.h[r].worse(t.h[m]) {
			m = r
		}
		if m == i {
			return
		}
		t.swap(i, m)
		i = m
	}
}

// best returns the kept items, best first.
func (t *topK) best() []scored {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b scored) int {
		if a.worse(b) {
			return 1
		}
		if b.worse(a) {
			return -1
		}
		return 0
	})
	return out
}
