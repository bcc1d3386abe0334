package engine

import (
	"context"
	"fmt"
)

// OpenImage opens a private in-memory copy of image, the bytes of an
// agentstate file (what Image returns, or a file read whole), as Open opens
// a file: the copy is the handle's, changed by its writes and gone when it
// closes; image itself is not kept. Bytes that are not an SQLite database
// are ErrNotAgentstate, another SQLite database too (as Open says of it).
func OpenImage(ctx context.Context, image []byte, opts *Options) (*DB, error) {
	if len(image) < 100 || string(image[:16]) != "SQLite format 3\x00" {
		return nil, fmt.Errorf("%w: the image is not an SQLite database (%d bytes)", ErrNotAgentstate, len(image))
	}
	o := DefaultOptions()
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	img := append([]byte(nil), image...)
	// An image of a file in WAL mode opens in rollback mode: it has no
	// -wal file beside it, and memory has no WAL-index.
	if img[18] == 2 || img[19] == 2 {
		img[18], img[19] = 1, 1
	}
	b, err := imageBackend(img, o)
	if err != nil {
		return nil, err
	}
	return openWith(ctx, Memory, b, o)
}

// serializer is a connection that copies its database into bytes (the
// SQLite drivers; a PostgreSQL database has no image).
type serializer interface {
	Serialize(schema string) ([]byte, error)
}

// Image returns a consistent copy of the database's bytes, from one read
// snapshot: an SQLite file that OpenImage, or any SQLite, opens (in
// rollback-journal mode: the copy has no -wal beside it). A PostgreSQL
// database has none (ErrInvalidArgument).
func (db *DB) Image(ctx context.Context) ([]byte, error) {
	var out []byte
	err := db.read(ctx, func(c *conn) error {
		s, ok := c.d.(serializer)
		if !ok {
			return fmt.Errorf("%w: a PostgreSQL database has no image (Image copies SQLite files; use Export)", ErrInvalidArgument)
		}
		// Any read in the transaction first, so that the copy is one
		// snapshot (serialize reads no pages of a database it can lock).
		if _, err := c.queryInt64("SELECT count(*) FROM sqlite_master"); err != nil {
			return err
		}
		var err error
		out, err = s.Serialize("main")
		return err
	})
	return out, err
}
