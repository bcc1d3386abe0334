package records

import "time"

// ThreadStatus is a thread's state in the thread list.
type ThreadStatus string

// Thread statuses.
const (
	ThreadIdle        ThreadStatus = "idle"
	ThreadBusy        ThreadStatus = "busy"
	ThreadInterrupted ThreadStatus = "interrupted"
	ThreadError       ThreadStatus = "error"
)

// Thread is one thread's list metadata. UserID is its owner ("" for
// threads created with AnyOwner).
type Thread struct {
	ThreadID    string         `json:"thread_id"`
	AssistantID string         `json:"assistant_id"`
	UserID      string         `json:"user_id"`
	DisplayName string         `json:"display_name"`
	Status      ThreadStatus   `json:"status"`
	Metadata    map[string]any `json:"metadata"`
	CreatedAt   time.Time      `json:"created_at"`
	UpdatedAt   time.Time      `json:"updated_at"`
}

// NewThread describes a thread to create. An empty ThreadID gets a fresh
// random one; Status defaults to idle. Metadata "pinned": true lists the
// thread before the others in Search.
type NewThread struct {
	ThreadID    string
	AssistantID string
	DisplayName string
	Status      ThreadStatus
	Metadata    map[string]any
}

// ThreadQuery selects threads for Search: metadata fields equal to the
// given values (type-exact: 1, 1.0, "1" and true all differ; keys are
// letters, digits, _ and -, dotted for nested fields), a status, and a page.
// Limit defaults to 100, at most 1000.
type ThreadQuery struct {
	Metadata map[string]any
	Status   ThreadStatus
	Limit    int
	Offset   int
}
