package engine

import "sync"

// connPool holds a handle's connections of one kind (writers or readers)
// and hands out the most recently returned first: with several
// connections to a server, a caller that works alone keeps using one warm
// connection (and one server process) instead of cycling through all.
type connPool struct {
	mu     sync.Mutex
	free   []*conn
	tokens chan struct{} // one per free connection
}

func newConnPool(n int) *connPool { return &connPool{tokens: make(chan struct{}, n)} }

// put returns c to the pool.
func (p *connPool) put(c *conn) {
	p.mu.Lock()
	p.free = append(p.free, c)
	p.mu.Unlock()
	p.tokens <- struct{}{}
}

// take removes a free connection; the caller holds one of its tokens.
func (p *connPool) take() *conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.free[len(p.free)-1]
	p.free = p.free[:len(p.free)-1]
	return c
}
