package sqlite

// Sharing one file with the npm package. A JavaScript process (Node) cannot
// take the POSIX locks SQLite's native VFS relies on, so it cannot join a
// native process's locking or WAL-index: the two kinds take turns, by a
// cooperative protocol both follow, and the later one fails with an error
// naming the holder.
//
//   - A JavaScript process owns the file: it creates "<db>.owner" with
//     O_EXCL, a JSON object naming itself ({"runtime":"node","pid":..,
//     "host":..,"since":..}), and removes it when it closes the file.
//   - Each native process that opens the file registers in "<db>.natives/",
//     one file per open handle, named after its host and pid and holding the
//     same kind of JSON; it removes that file when it closes.
//   - Each side registers first, then looks for the other; finding a live
//     one, it withdraws and fails. Since both write before they read, two
//     processes starting at once cannot both miss each other. So that they
//     do not both back off, a native always gives way to an owner file, and
//     Node gives a native it finds a moment (50 ms) to do so.
//   - An entry of a dead process (same host, pid gone) is stale: whoever
//     finds it removes it and goes on. A process on another host, or one
//     whose liveness cannot be checked (WASI), counts as live; the error
//     says which file to remove if it is not.
//
// Natives do not exclude each other here: SQLite's own locks do that.

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentstate/agentstate/engine/internal/driver"
)

// Holder is a process that has a database file open, as its registration
// file records it (declared in package driver, so that every build has it).
type Holder = driver.Holder

// HeldError reports a database file open in a JavaScript process. It is
// also a driver.ErrBusy.
type HeldError = driver.HeldError

// shareGrace bounds how long Register retries while a JavaScript process
// owns the file: long enough for one that is closing, or that started at
// the same moment and will withdraw; a process that keeps the file open
// holds it for its lifetime, which no busy timeout would outwait.
const shareGrace = time.Second

// Register records this process as a native user of the database file at
// path and checks that no JavaScript process owns it; the returned function
// withdraws the record. It retries for up to wait (at most a second) while
// a live JavaScript process owns the file, then fails with a *HeldError.
func Register(path string, wait time.Duration) (release func(), err error) {
	deadline := time.Now().Add(min(wait, shareGrace))
	delay := 5 * time.Millisecond
	for {
		release, err := tryRegister(path)
		if err == nil {
			return release, nil
		}
		var held *HeldError
		if !errors.As(err, &held) || !time.Now().Before(deadline) {
			return nil, err
		}
		// Jittered, so that two processes that keep meeting stop meeting.
		time.Sleep(min(delay/2+mrand.N(delay), time.Until(deadline)))
		delay = min(2*delay, 100*time.Millisecond)
	}
}

var errRetry = errors.New("owner file changed")

func tryRegister(path string) (func(), error) {
	me := self()
	entry, err := register(path, me)
	readOnlyDir := errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
	if err != nil && !readOnlyDir {
		return nil, fmt.Errorf("agentstate: register in %s.natives: %w", path, err)
	}
	// Where this process cannot write (a read-only directory or file
	// system), no JavaScript process of its user could take the file
	// either; it still looks for one, without registering.
	release := func() {
		if entry != "" {
			os.Remove(entry)
			os.Remove(path + ".natives") // only while empty: other natives keep it
		}
	}
	for range 5 {
		err = checkOwner(path, me, !readOnlyDir)
		if err != errRetry {
			break
		}
	}
	if err != nil {
		release()
		return nil, err
	}
	return release, nil
}

func self() Holder {
	h := Holder{Runtime: "native", PID: os.Getpid(), Since: time.Now().UTC().Format(time.RFC3339)}
	h.Host, _ = os.Hostname()
	if runtime.GOOS == "wasip1" {
		// No process ids under WASI: a runner that wants this process's
		// record checkable names its own (wasm/wasi/run.mjs does).
		h.Runtime, h.PID = "wasi", 0
		if pid, err := strconv.Atoi(os.Getenv("AGENTSTATE_HOST_PID")); err == nil && pid > 0 {
			h.PID = pid
			h.Host = os.Getenv("AGENTSTATE_HOSTNAME")
		}
	}
	if len(os.Args) > 0 {
		h.Program = filepath.Base(os.Args[0])
	}
	return h
}

// register is writeEntry; tests replace it.
var register = writeEntry

// writeEntry creates this handle's file in <path>.natives/.
func writeEntry(path string, me Holder) (string, error) {
	dir := path + ".natives"
	body, err := json.Marshal(me)
	if err != nil {
		return "", err
	}
	host := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, me.Host)
	for range 5 {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
		name := filepath.Join(dir, fmt.Sprintf("%s.%d.%s", host, me.PID, rand.Text()[:8]))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrNotExist) {
			continue // the last native removed the directory meanwhile
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("%s keeps disappearing", dir)
}

// checkOwner fails with a *HeldError while a live JavaScript process owns
// path, removes the owner file of a dead one, and then the "-shm"
// directory earlier npm builds left as a switch against native opens.
func checkOwner(path string, me Holder, writable bool) error {
	owner := path + ".owner"
	body, err := os.ReadFile(owner)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("agentstate: read %s: %w", owner, err)
	}
	if err == nil {
		var h Holder
		if json.Unmarshal(body, &h) != nil || h.Runtime == "" {
			// Being written right now (it is created, then filled).
			return &HeldError{Path: path, Record: owner, Holder: Holder{Runtime: "a JavaScript process"}}
		}
		switch alive(h, me) {
		case yes:
			return &HeldError{Path: path, Record: owner, Holder: h}
		case unknown:
			return &HeldError{Path: path, Record: owner, Holder: h,
				Stale: fmt.Sprintf("if that process is gone, remove %s", owner)}
		}
		if !writable {
			return nil
		}
		if err := removeStale(owner, body); err != nil {
			return err
		}
	}
	if !writable {
		return nil
	}
	if st, err := os.Lstat(path + "-shm"); err == nil && st.IsDir() {
		os.Remove(path + "-shm") // only while empty
	}
	return nil
}

// removeStale removes the owner file of a dead process, unless another
// process replaced it since it was read: it is moved aside under a name of
// our own first, and put back if its content changed.
func removeStale(owner string, body []byte) error {
	aside := fmt.Sprintf("%s.stale.%d.%s", owner, os.Getpid(), rand.Text()[:8])
	if err := os.Rename(owner, aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errRetry
		}
		return fmt.Errorf("agentstate: remove stale %s: %w", owner, err)
	}
	moved, err := os.ReadFile(aside)
	if err != nil || !bytes.Equal(moved, body) {
		os.Link(aside, owner) // fails if yet another owner came: fine
		os.Remove(aside)
		return errRetry
	}
	os.Remove(aside)
	return nil
}

type liveness int

const (
	no liveness = iota
	yes
	unknown
)

// alive says whether h is a live process, as far as this one can tell.
func alive(h Holder, me Holder) liveness {
	if h.Host == "" || h.Host != me.Host || h.PID <= 0 || me.Runtime == "wasi" {
		return unknown
	}
	return pidAlive(h.PID)
}
