// Package testpg is the PostgreSQL server of the tests: the URL in
// AGENTSTATE_TEST_PG, which .ci/with-postgres sets after starting a
// throwaway server. It is for tests only.
package testpg

import (
	"os"
	"testing"
)

// Env names the variable that holds the server's URL.
const Env = "AGENTSTATE_TEST_PG"

// URL returns the test server's URL. Without one the test skips, saying
// so, unless AGENTSTATE_CI is set: CI must test PostgreSQL, so there it
// fails.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		if os.Getenv("AGENTSTATE_CI") != "" {
			t.Fatal(Env + " is not set: CI must run the PostgreSQL tests (.ci/with-postgres)")
		}
		t.Skip("PostgreSQL tests not run: set " + Env + "=postgres://... (.ci/with-postgres starts a server)")
	}
	return u
}
