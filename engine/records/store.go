package records

import "time"

// Item is one stored value with its place and timestamps. ExpiresAt is zero
// for items that never expire.
type Item struct {
	Namespace []string       `json:"namespace"`
	Key       string         `json:"key"`
	Value     map[string]any `json:"value"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	ExpiresAt time.Time      `json:"expires_at,omitzero"`
	// Score is set by a search with a Query: higher ranks first.
	Score *float64 `json:"score,omitempty"`
}

// NoExpiry as a TTL makes an item never expire, whatever the default TTL.
const NoExpiry time.Duration = -1

// TTLRefresh says whether a read pushes back the expiry of what it returns
// (to now plus the item's TTL). Handles opened read-only never refresh.
type TTLRefresh int8

const (
	// RefreshDefault follows Options.StoreRefreshOnRead.
	RefreshDefault TTLRefresh = iota
	// RefreshOn refreshes the TTL of every item returned.
	RefreshOn
	// RefreshOff leaves expiry times as they are.
	RefreshOff
)

// StoreOp is one operation of Store.Batch: a GetOp, PutOp, SearchOp or
// ListNamespacesOp.
type StoreOp interface{ storeOp() }

// GetOp reads the item at (Namespace, Key).
type GetOp struct {
	Namespace []string
	Key       string
	Refresh   TTLRefresh
}

// PutOp stores Value at (Namespace, Key); a nil Value deletes the item. TTL
// 0 means Options.StoreDefaultTTL, NoExpiry means never, anything else must
// be positive.
//
// Vectors are the item's embeddings by field path (the host embeds): a put
// replaces all of the item's vectors with them, so a put without Vectors
// leaves the item unindexed.
type PutOp struct {
	Namespace []string
	Key       string
	Value     map[string]any
	TTL       time.Duration
	Vectors   map[string][]float32
}

// SearchOp lists items under a namespace prefix (whole segments; an empty
// prefix means every namespace), newest updated first. Filter keys are
// dotted paths into the value; a filter value is a plain value (equality), an
// operator map with $eq $ne $gt $gte $lt $lte, or a nested filter map.
// Limit defaults to 10 and must be at most 1000.
//
// With a Query vector, the search ranks the items that match Prefix and
// Filter by their best vector instead (Item.Score, higher first), then
// applies Offset and Limit; items without vectors are left out. Distance
// is "cosine" (the default: cosine similarity), "inner_product" (the dot
// product) or "l2" (minus the Euclidean distance).
type SearchOp struct {
	Prefix   []string
	Filter   map[string]any
	Limit    int
	Offset   int
	Refresh  TTLRefresh
	Query    []float32
	Distance string
}

// ListNamespacesOp lists the distinct namespaces holding live items, in
// segment order. Prefix and Suffix may hold "*" segments matching any one
// segment; MaxDepth > 0 cuts longer namespaces to that depth (then
// deduplicates). Limit defaults to 100 and must be at most 1000.
type ListNamespacesOp struct {
	Prefix   []string
	Suffix   []string
	MaxDepth int
	Limit    int
	Offset   int
}

func (GetOp) storeOp() {}

func (PutOp) storeOp() {}

func (SearchOp) storeOp() {}

func (ListNamespacesOp) storeOp() {}

// StoreResult is the result of one Batch operation: Item for a GetOp (nil
// when absent), Items for a SearchOp, Namespaces for a ListNamespacesOp, and
// nothing for a PutOp.
type StoreResult struct {
	Item       *Item
	Items      []Item
	Namespaces [][]string
}

// PutOption changes how Store.Put stores an item.
type PutOption func(*PutOp)

// WithTTL gives the item its own TTL (NoExpiry: never expires).
func WithTTL(d time.Duration) PutOption { return func(op *PutOp) { op.TTL = d } }

// GetOption changes how Store.Get reads an item.
type GetOption func(*GetOp)

// WithRefresh overrides Options.StoreRefreshOnRead for one read.
func WithRefresh(r TTLRefresh) GetOption { return func(op *GetOp) { op.Refresh = r } }
