//go:build race

package engine

// raceEnabled: the race detector slows every step several times, so the
// reliability tests scale their loops down (see relScale).
const raceEnabled = true
