//go:build race

package codec

// raceEnabled: under the race detector sync.Pool drops some of what it is
// given, so pooled scratch space cannot be counted on in allocation tests.
const raceEnabled = true
