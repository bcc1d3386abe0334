// Package admin holds what the engine's operator calls take and report:
// engine.DB's Verify, Retain, Prune, Export and Import, ConvertThread and
// ConvertFile, Info, Stats and CacheStats, CheckpointWAL, and the
// inspection views CheckpointLog and ListThreads.
//
// It holds types and constants only, as database/sql/driver does for
// database/sql: the calls are methods of engine.DB, whose documentation
// (and docs/cli.md, which the agentstate command's subcommands follow)
// says what each does.
package admin
