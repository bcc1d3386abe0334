// Command writer is the Go writer of the mixed front-end test
// (python/tests/test_pg_mixed.py): for a number of seconds it puts
// checkpoints, each with one pending write, through the native engine on a
// PostgreSQL schema, on a thread of its own and on the thread every writer
// shares, one goroutine each, and prints each acknowledged one as
// "thread id" on a line (an outcome it cannot know as "? thread id").
//
//	writer URL NAME SECONDS
//
// The values are JSON, under LangGraph's type tag "json": the Python and
// JavaScript savers read them back as they read their own. It is for tests
// only.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/agentstate/agentstate/codec"
	"github.com/agentstate/agentstate/engine"
	_ "github.com/agentstate/agentstate/engine/postgres" // PostgreSQL URLs
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 3 {
		return errors.New("usage: writer URL NAME SECONDS")
	}
	url, name := args[0], args[1]
	secs, err := strconv.ParseFloat(args[2], 64)
	if err != nil {
		return err
	}
	ctx := context.Background()
	db, err := engine.Open(ctx, url, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	var mu sync.Mutex // one line at a time on stdout
	var refused int
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, thread := range []string{"own-" + name, "shared"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parent := ""
			for i := 0; time.Now().Before(end); i++ {
				id, sure, err := putOne(ctx, db, thread, parent, name, i)
				mu.Lock()
				switch {
				case err == nil:
					fmt.Printf("%s %s\n", thread, id)
					parent = id
				case !sure:
					fmt.Printf("? %s %s\n", thread, id)
				case errors.Is(err, engine.ErrConflict) || errors.Is(err, engine.ErrBusy):
					refused++
				default:
					mu.Unlock()
					errs <- fmt.Errorf("%s step %d: %w", thread, i, err)
					return
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	fmt.Fprintf(os.Stderr, "writer %s: %d refused\n", name, refused)
	return <-errs
}

// putOne puts one checkpoint (a child of parent) and its write; sure is
// false when the outcome is unknown.
func putOne(ctx context.Context, db *engine.DB, thread, parent, name string, i int) (id string, sure bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	id = uuid6()
	v := func(s string) codec.Blob { return codec.Blob{Type: "json", Data: strconv.AppendQuote(nil, s)} }
	cp := engine.Checkpoint{
		V: 4, ID: id, TS: time.Now().UTC().Format(time.RFC3339Nano),
		ChannelValues:   map[string]codec.Blob{"v": v(fmt.Sprintf("%s-%d", name, i))},
		ChannelVersions: map[string]string{"v": strconv.Itoa(i + 1)},
		VersionsSeen:    map[string]map[string]string{},
	}
	cfg := engine.Config{ThreadID: thread, CheckpointID: parent}
	md := engine.Metadata{"source": "loop", "step": i, "writer": name}
	saved, err := db.Put(ctx, cfg, cp, md, map[string]string{"v": strconv.Itoa(i + 1)})
	if err == nil {
		err = db.PutWrites(ctx, saved, []engine.Write{{Channel: "v", Value: v(fmt.Sprintf("w-%s-%d", name, i))}}, "task-"+name, "")
	}
	return id, !errors.Is(err, engine.ErrOutcomeUnknown), err
}

var (
	idMu   sync.Mutex
	lastTS uint64
)

// uuid6 is a version 6 UUID, as LangGraph's checkpoint ids are: 100 ns
// since 1582-10-15 first, so that each id sorts after the ones before it
// (strictly: a tick is taken only once).
func uuid6() string {
	idMu.Lock()
	ts := uint64(time.Now().UnixNano()/100) + 0x01B21DD213814000
	if ts <= lastTS {
		ts = lastTS + 1
	}
	lastTS = ts
	idMu.Unlock()
	var b [16]byte
	binary.BigEndian.PutUint32(b[0:4], uint32(ts>>28))
	binary.BigEndian.PutUint16(b[4:6], uint16(ts>>12))
	binary.BigEndian.PutUint16(b[6:8], 0x6000|uint16(ts&0x0FFF))
	rand.Read(b[8:])
	b[8] = b[8]&0x3F | 0x80
	return codec.UUIDText(b)
}
