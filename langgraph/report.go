package langgraph

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/engine"
)

// ErrUnsupportedSource is what every refusal of a source matches: a file or
// database that is not a LangGraph saver's, or threads holding values this
// build cannot read (see UnsupportedError).
var ErrUnsupportedSource = errors.New("langgraph: unsupported import source")

// Problem is a thread the import cannot read, and where and why: the first
// thing in it that stops it.
type Problem struct {
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id,omitempty"`
	Channel      string `json:"channel,omitempty"`
	Reason       string `json:"reason"`
	// tooLarge marks a value past the engine's limits (Reason names the
	// limit): the UnsupportedError listing it is engine.ErrTooLarge too.
	tooLarge bool
}

func (p *Problem) Error() string { return p.String() }

func (p Problem) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "thread %q", p.ThreadID)
	if p.CheckpointNS != "" {
		fmt.Fprintf(&b, " namespace %q", p.CheckpointNS)
	}
	if p.CheckpointID != "" {
		fmt.Fprintf(&b, " checkpoint %q", p.CheckpointID)
	}
	if p.Channel != "" {
		fmt.Fprintf(&b, " channel %q", p.Channel)
	}
	return b.String() + ": " + p.Reason
}

// Orphan is a checkpoint whose parent the source does not hold, imported
// as a root (Options.OrphansAsRoots).
type Orphan struct {
	ThreadID     string `json:"thread_id"`
	CheckpointNS string `json:"checkpoint_ns"`
	CheckpointID string `json:"checkpoint_id"`
	Parent       string `json:"parent"` // the missing parent's id
}

// UnsupportedError lists every thread of Source that the import cannot
// read; with Options.SkipUnsupported they are skipped instead (and listed
// in Report.Skipped). It matches ErrUnsupportedSource.
type UnsupportedError struct {
	Source   string
	Problems []Problem
	// Importable counts the threads that would import without them.
	Importable int
}

func (e *UnsupportedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %s: %d of %d threads cannot be imported:",
		ErrUnsupportedSource, e.Source, len(e.Problems), len(e.Problems)+e.Importable)
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap gives ErrUnsupportedSource, and engine.ErrTooLarge when a
// problem is a value past the engine's limits.
func (e *UnsupportedError) Unwrap() []error {
	for _, p := range e.Problems {
		if p.tooLarge {
			return []error{ErrUnsupportedSource, engine.ErrTooLarge}
		}
	}
	return []error{ErrUnsupportedSource}
}

// Report says what Import read and wrote.
type Report struct {
	Source string `json:"source"`
	// Saver is the source's kind: "sqlite" (a SqliteSaver file, LangGraph.js
	// or Python) or "postgres" (a PostgresSaver database).
	Saver string `json:"saver"`
	Mode  string `json:"mode"`
	// Into is the form written: "protocol" or "messages" (see Into).
	Into        string `json:"into"`
	Threads     int    `json:"threads"`
	Namespaces  int    `json:"namespaces"`
	Checkpoints int    `json:"checkpoints"`
	Writes      int    `json:"writes"`
	// Snapshots counts stored message lists; Overwrites the writes added so
	// that a checkpoint replays exactly; IDsFilled the messages of writes
	// that took their id from the state.
	Snapshots  int `json:"snapshots"`
	Overwrites int `json:"overwrites"`
	IDsFilled  int `json:"ids_filled"`
	// ParentsMissing counts checkpoints whose parent is not in the source,
	// imported as roots (Options.OrphansAsRoots; without it such a
	// checkpoint makes its thread unsupported); Orphans lists them.
	ParentsMissing int      `json:"parents_missing"`
	Orphans        []Orphan `json:"orphans"`
	// DeltaChannels counts the DeltaChannels rebuilt from their snapshots
	// and writes, per thread and namespace, by reducer.
	DeltaChannels map[string]int `json:"delta_channels"`
	// Dropped counts LangChain message fields that codec.Message has no
	// place for and that held something ("ToolMessage.artifact"), by name.
	Dropped map[string]int `json:"dropped"`
	// Blobs counts, in the protocol's form, the channel values and writes
	// stored, by serde type ("msgpack", "json", "bytes", "null"). In the
	// messages form it counts the stored values and writes kept as the source's bytes
	// (a blob of the serde's type: "msgpack", "bytes", "bytearray")
	// because the engine's values cannot hold them, by the first thing in
	// each they cannot hold ("datetime.datetime", "bytes").
	Blobs map[string]int `json:"blobs"`
	// Renumbered counts writes stored at another index than the source's:
	// the protocol numbers a task's writes by position, and a source index
	// no position gives (a gap no special write of the task fills) cannot
	// be kept. Their order is kept.
	Renumbered int `json:"renumbered"`
	// OrphanWrites counts writes stored under checkpoints the source does
	// not hold (left by a deletion): they belong to nothing and are not
	// imported.
	OrphanWrites int `json:"orphan_writes"`
	// Unversioned counts channel values of checkpoints that give their
	// channel no version (LangGraph.js writes the empty value of a channel
	// not yet written, [] or 0): not stored, as a saver on the engine does
	// not store them; LangGraph starts such a channel empty.
	Unversioned int `json:"unversioned"`
	// Imported lists the ids of the threads imported.
	Imported []string `json:"-"`
	// Skipped lists the threads not imported (Options.SkipUnsupported).
	Skipped []Problem `json:"skipped"`
}
