//go:build js || wasip1

package engine

import (
	"context"
	"errors"
	"testing"
)

func startPGTests() (string, error) { return "no PostgreSQL driver in WebAssembly builds", nil }
func stopPGTests()                  {}

func pgTestSchema(testing.TB, string) (string, error) {
	return "", errors.New("no PostgreSQL driver in WebAssembly builds")
}

func pgErrorLeaked(error) bool { return false }

func pgHoldLock(t testing.TB, _, _ string) func() {
	t.Fatal("no PostgreSQL driver in WebAssembly builds")
	return nil
}

func testRefusesSchemasItCannotOwn(t *testing.T) {
	t.Fatal("no PostgreSQL driver in WebAssembly builds")
}

func manyRaw(context.Context, string, relWork, string, func(...any)) error {
	return errors.New("no PostgreSQL driver in WebAssembly builds")
}

func benchStepRawPG(b *testing.B) { b.Fatal("no PostgreSQL driver in WebAssembly builds") }
