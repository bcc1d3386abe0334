package records

import "time"

// Event categories DeerFlow uses; any category of 1..16 characters is
// accepted.
const (
	CategoryMessage    = "message"
	CategoryTrace      = "trace"
	CategoryMiddleware = "middleware"
	CategoryOutputs    = "outputs"
	CategoryError      = "error"
)

// Metadata keys the engine writes when it cuts a trace's content.
const (
	MetaContentTruncated   = "content_truncated"
	MetaOriginalByteLength = "original_byte_length"
)

// Event is one entry of a thread's event stream. Seq and CreatedAt are set
// by the engine. Content is any value the codec stores (a string, a map of
// content...). A string "task_id" in Metadata can be filtered on.
type Event struct {
	ThreadID  string         `json:"thread_id"`
	RunID     string         `json:"run_id"`
	EventType string         `json:"event_type"`
	Category  string         `json:"category"`
	Content   any            `json:"content"`
	Metadata  map[string]any `json:"metadata"`
	Seq       int64          `json:"seq"`
	CreatedAt time.Time      `json:"created_at"`
	// UserID is the user the event was written for (DeerFlow stamps the
	// request's user); "" is stored as NULL: no owner. Events.ForUser reads
	// only one user's events.
	UserID string `json:"user_id"`
}

// MessageQuery pages through a thread's messages, returned in ascending seq
// order. Without a cursor it returns the latest Limit messages; with
// BeforeSeq the Limit messages just before that seq; with AfterSeq the Limit
// messages just after it (AfterSeq: new(int64(0)) starts from the oldest).
// Give at most one cursor. Limit defaults to 50, at most 1000.
type MessageQuery struct {
	Limit     int
	BeforeSeq *int64
	AfterSeq  *int64
}

// RunEventQuery selects events of one run, in ascending seq order: only the
// listed Types (all when empty), only those whose metadata task_id is TaskID
// (when set), after AfterSeq. Limit defaults to 100, at most 1000.
type RunEventQuery struct {
	Types    []string
	TaskID   string
	AfterSeq int64
	Limit    int
}
