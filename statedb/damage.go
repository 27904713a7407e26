package statedb

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"

	"github.com/replaycheck/replaycheck/internal/atomicfile"
	"github.com/replaycheck/replaycheck/internal/regular"
)

// checkTables opens every table file of the database at dir the way
// Badger's Open does (footer, index and its checksum, last block) and
// reports the first that cannot be read. Badger opens tables in goroutines
// of its own, where a file cut short or overwritten makes it panic (the
// process dies, nothing can recover it); here the same work runs in the
// caller's goroutine, so damage becomes a *DamagedError naming the file.
// It reads what Open reads anyway, so it costs about as much again. The
// tables are read at at (a pinned path, see pinDir) and damage is named
// in dir.
//
// A table not verified before (by name, size and modification time, in
// the VERIFIED file beside it) has every block's checksum verified too:
// Badger's reads skip a block that fails its checksum as if its keys were
// absent (a node's state read as never written), so damage inside a block
// would answer wrong rather than fail. That reads the whole table, ten
// times a query's cost, so it is done once per table and remembered where
// the directory is writable.
func checkTables(at, dir string, opts badger.Options) error {
	names, err := filepath.Glob(filepath.Join(at, "*.sst"))
	if err != nil {
		return err
	}
	slices.Sort(names)
	topt := table.Options{
		ReadOnly:           true,
		BlockSize:          opts.BlockSize,
		BloomFalsePositive: opts.BloomFalsePositive,
		ChkMode:            options.NoVerification,
		Compression:        opts.Compression,
	}
	before := readVerified(at)
	now := map[string]tableStamp{}
	for _, name := range names {
		st, err := os.Stat(name)
		if err != nil {
			return &DamagedError{Dir: dir, Err: renamed(err, at, dir)}
		}
		base, stamp := filepath.Base(name), tableStamp{Size: st.Size(), ModNS: st.ModTime().UnixNano()}
		stamp.Inode, stamp.ChangNS = fileIdentity(st)
		if err := checkTable(name, topt, before[base] != stamp); err != nil {
			return &DamagedError{Dir: dir, Err: renamed(fmt.Errorf("%s: %w", base, err), at, dir)}
		}
		now[base] = stamp
	}
	if !maps.Equal(before, now) {
		writeVerified(at, now) // best effort: a read-only database verifies again next time
	}
	return nil
}

// verifiedName is the file beside a store's tables that lists those whose
// every block was verified.
const verifiedName = "VERIFIED"

// tableStamp identifies a table file's contents well enough to skip
// verifying it again: a table is never rewritten in place. The inode and
// change time (where the system has them) tell a copy that kept the size
// and modification time (cp -p, rsync -t, tar) from the file verified.
type tableStamp struct {
	Size    int64  `json:"size"`
	ModNS   int64  `json:"mod_ns"`
	Inode   uint64 `json:"inode,omitempty"`
	ChangNS int64  `json:"change_ns,omitempty"`
}

// maxVerifiedBytes bounds a VERIFIED file: a stamp per table of a part.
const maxVerifiedBytes = 16 << 20

func readVerified(at string) map[string]tableStamp {
	out := map[string]tableStamp{}
	// A tampered one (a pipe, a device, megabytes) counts as none.
	if b, err := regular.ReadFile(filepath.Join(at, verifiedName), maxVerifiedBytes); err == nil {
		if json.Unmarshal(b, &out) != nil {
			return map[string]tableStamp{}
		}
	}
	return out
}

func writeVerified(at string, stamps map[string]tableStamp) {
	if b, err := json.Marshal(stamps); err == nil {
		atomicfile.Write(filepath.Join(at, verifiedName), b, 0o644)
	}
}

func checkTable(name string, topt table.Options, everyBlock bool) (err error) {
	if st, err := os.Stat(name); err != nil {
		return err
	} else if st.Size() == 0 {
		return errors.New("empty table file")
	}
	mf, err := z.OpenMmapFile(name, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if r := recover(); r != nil {
			// Badger's panic text is a dump of the table's footer.
			err = errors.New("the table file is cut short or corrupt: its index cannot be read")
		}
		if !closed {
			mf.Close(-1)
		}
	}()
	t, err := table.OpenTable(mf, topt)
	if err != nil {
		return err
	}
	if everyBlock {
		// A panic here (a corrupt block's trailer) leaves the file to
		// the deferred recover, which closes it.
		err = t.VerifyChecksum()
	}
	closed = true
	if cerr := t.MmapFile.Close(-1); err == nil {
		err = cerr
	}
	return err
}

// recoverDamage turns a panic while reading the store (a table damaged
// after it was opened: Badger decodes what it reads without checking it)
// into a *DamagedError; deferred by every read of a DB.
func (db *DB) recoverDamage(err *error) {
	if r := recover(); r != nil {
		*err = &DamagedError{Dir: db.dir, Err: fmt.Errorf("reading the store failed: %s", oneLine(fmt.Sprint(r)))}
	}
}
