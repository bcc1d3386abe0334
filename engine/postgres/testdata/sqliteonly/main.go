// Command sqliteonly is a program that imports the engine and not
// engine/postgres: the tests of engine/postgres list what it links (no
// PostgreSQL client) and run it on a postgres:// URL (refused, naming the
// package to import).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agentstate/agentstate/engine"
)

// main opens its argument and prints "invalid-argument: " and the error
// when Open fails with engine.ErrInvalidArgument.
func main() {
	db, err := engine.Open(context.Background(), os.Args[1], nil)
	if errors.Is(err, engine.ErrInvalidArgument) {
		fmt.Println("invalid-argument:", err)
		os.Exit(1)
	}
	if err != nil {
		fmt.Println("other error:", err)
		os.Exit(1)
	}
	db.Close()
	fmt.Println("opened")
}
