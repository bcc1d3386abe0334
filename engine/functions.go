package engine

import "github.com/agentstate/agentstate/engine/internal/driver"

// sqlFuncs are the Go functions the engine's SQL calls, registered on every
// connection of a driver that runs Go inside SQL. Each is deterministic and
// treats its arguments as untrusted bytes.
func sqlFuncs() []driver.Func {
	return []driver.Func{
		{Name: "agentstate_meta_match", NArg: 2, Call: metaMatchFunc},
		{Name: "agentstate_version", NArg: 2, Call: versionFunc},
		{Name: "agentstate_store_match", NArg: 2, Call: matchFunc(compileStoreFilter)},
		{Name: "agentstate_thread_match", NArg: 2, Call: matchFunc(compileMetadataFilter)},
	}
}
