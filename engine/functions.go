package engine

import "github.com/ncruces/go-sqlite3"

// sqlFunctions are the Go functions registered on every connection, by SQL
// name. Surfaces add theirs in an init function of their own file; each must
// be deterministic and must treat its arguments as untrusted bytes.
var sqlFunctions = map[string]sqlFunction{}

type sqlFunction struct {
	nArg int
	fn   sqlite3.ScalarFunction
}

func registerFunctions(c *sqlite3.Conn) error {
	for name, f := range sqlFunctions {
		if err := c.CreateFunction(name, f.nArg, sqlite3.DETERMINISTIC|sqlite3.INNOCUOUS, f.fn); err != nil {
			return err
		}
	}
	return nil
}
