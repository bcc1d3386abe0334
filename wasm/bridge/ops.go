//go:build js || (wasip1 && hostsqlite)

package bridge

import "context"

// op is one call of the bridge on an open handle.
type op func(ctx context.Context, h *handle, req []byte, i in) (any, *Out, error)

// ops maps the names the front ends call (the npm package's Database.call,
// the Python package's Database) to their implementations: every op in one
// table. wasm/npm/test/records.test.js checks that the package calls these
// names and no other; AddTestHooks adds "test.crash" for the tests.
var ops = map[string]op{
	// LangGraph's checkpoint protocol (checkpoints.go)
	"put":           opPut,
	"putWrites":     opPutWrites,
	"writes.batch":  opWritesBatch,
	"getTuple":      opGetTuple,
	"list.open":     opListOpen,
	"list.next":     opListNext,
	"list.close":    opListClose,
	"deleteThread":  opDeleteThread,
	"deleteForRuns": opDeleteForRuns,
	"copyThread":    opCopyThread,
	"prune":         opPrune,
	"deltaHistory":  opDeltaHistory,
	"info":          opInfo,
	"image":         opImage,

	// the record surfaces (records.go)
	"store.batch":             opStoreBatch,
	"store.sweep":             opStoreSweep,
	"runs.create":             opRunsCreate,
	"runs.get":                opRunsGet,
	"runs.list":               opRunsList,
	"runs.setStatus":          opRunsSetStatus,
	"runs.complete":           opRunsComplete,
	"runs.delete":             opRunsDelete,
	"runs.tokenUsage":         opRunsTokenUsage,
	"runs.setModelName":       opRunsSetModelName,
	"runs.progress":           opRunsProgress,
	"runs.listActive":         opRunsListActive,
	"runs.apply":              opRunsApply,
	"events.put":              opEventsPut,
	"events.listMessages":     opEventsListMessages,
	"events.listRunEvents":    opEventsListRunEvents,
	"events.putIfAbsent":      opEventsPutIfAbsent,
	"events.listRunMessages":  opEventsListRunMessages,
	"events.lastVisibleAISeq": opEventsLastVisibleAISeq,
	"threads.setOwner":        opThreadsSetOwner,
	"events.countMessages":    opEventsCount,
	"events.deleteThread":     opEventsDeleteThread,
	"events.deleteRun":        opEventsDeleteRun,
	"threads.create":          opThreadsCreate,
	"threads.get":             opThreadsGet,
	"threads.search":          opThreadsSearch,
	"threads.update":          opThreadsUpdate,
	"threads.delete":          opThreadsDelete,

	// the CLI's bench workload inside the build (bench.go)
	"bench": opBench,
}
