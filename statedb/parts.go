package statedb

import (
	"cmp"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// A database's steps are stored in parts: Badger stores in subdirectories
// of its folder, each holding a contiguous range of steps, which a build
// writes one after the other. A part is compacted and closed when the
// next one starts, so the memory a build holds is that of one part
// (Badger writes and keeps its tables through memory maps), not of the
// whole trace. The folder itself is a small store that holds only Meta
// (the catalog).
//
// Each part is complete for the steps it holds: its first version of
// every node that has run is a checkpoint of the node's whole state
// (written at the version of the step before the part), so a state read
// never leaves the part of its step. Field versions are written only where
// they change; a field's history is read across parts, newest first.

// PartBytes is how many bytes of keys and values a part holds before the
// build starts the next (Options.PartBytes overrides it).
const PartBytes = 192 << 20

// part is one store of a database.
type part struct {
	dir   string // as named in messages
	at    string // where its store is opened from, if not dir (pinDir)
	first int    // the first step it holds

	mu  sync.Mutex // guards bdb, which a read during a build opens lazily
	bdb *badger.DB // the writer's store while built; nil until opened for reading
	// closing, when set, is closed once the writer's store is: the part
	// cannot be opened for reading before.
	closing chan struct{}
	err     error // of closing the writer's store
	closed  bool  // by DB.Close: no store opens again
	// checked: its tables were checked for damage (checkTables) already.
	checked bool
}

func partDir(dir string, i int) string { return filepath.Join(dir, fmt.Sprintf("part-%04d", i)) }

// store is the part's Badger store, opened read-only at its first use.
func (p *part) store() (*badger.DB, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bdb != nil {
		return p.bdb, nil
	}
	if p.closed {
		return nil, ErrClosed
	}
	if p.closing != nil {
		<-p.closing
		if p.err != nil {
			return nil, fmt.Errorf("write the trace database part %s: %w", p.dir, p.err)
		}
	}
	at := cmp.Or(p.at, p.dir)
	opts := readOptions(at)
	if !p.checked {
		if err := checkTables(at, p.dir, opts); err != nil {
			return nil, err
		}
		p.checked = true
	}
	bdb, err := badger.OpenManaged(opts)
	if err != nil {
		return nil, &DamagedError{Dir: p.dir, Err: renamed(err, at, p.dir)}
	}
	p.bdb = bdb
	return bdb, nil
}

// ErrClosed is returned by reads of a DB after Close.
var ErrClosed = errors.New("the trace database is closed")

// close closes the part's store if it is open; it opens no more.
func (p *part) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.bdb == nil {
		return nil
	}
	err := p.bdb.Close()
	p.bdb = nil
	return err
}

// readOptions open a store of a complete database. Blocks are checked as
// they are read: damage is then an error, not garbage decoded as state.
// A part's cache is small: a debugger reads few steps of each.
func readOptions(dir string) badger.Options {
	return badgerOptions(dir).WithReadOnly(true).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithBlockCacheSize(16 << 20)
}

// parts lists a database's parts; while it is built the builder appends
// to it, and it closes a part's writer store once the part is written,
// under mu's write lock, so that a read holds mu's read lock.
type parts struct {
	mu   sync.RWMutex
	list []*part
}

// of is the index of the part holding step (the first part for steps
// before #0).
func (ps *parts) of(step int) int {
	i, found := slices.BinarySearchFunc(ps.list, step, func(p *part, s int) int { return p.first - s })
	if !found {
		i--
	}
	return max(i, 0)
}

// firsts are the parts' first steps, as Meta.Parts lists them.
func (ps *parts) firsts() []int {
	out := make([]int, len(ps.list))
	for i, p := range ps.list {
		out[i] = p.first
	}
	return out
}

// finish closes the writer's store of a part once every step of it is
// written. Closing compacts what Badger kept in memory and in level 0
// into the levels readers search (buildOptions: CompactL0OnClose), and
// releases the store's memory maps. Reads of the part wait for it, then
// open the part read-only.
func (ps *parts) finish(p *part) error {
	ps.mu.Lock() // no read is using the writer's store once this is held
	p.mu.Lock()
	w := p.bdb
	p.bdb, p.closing = nil, make(chan struct{})
	p.mu.Unlock()
	ps.mu.Unlock()
	defer close(p.closing) // even if Close panics: readers wait for it
	if w == nil {
		return nil
	}
	p.err = w.Close()
	if p.err != nil {
		return fmt.Errorf("write the trace database part %s: %w", p.dir, p.err)
	}
	return nil
}

// closeAll closes every open store of the parts; the first error is
// returned.
func (ps *parts) closeAll() error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var first error
	for _, p := range ps.list {
		if err := p.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
