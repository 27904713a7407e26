package statedb

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
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
	for _, name := range names {
		if err := checkTable(name, topt); err != nil {
			return &DamagedError{Dir: dir, Err: renamed(fmt.Errorf("%s: %w", filepath.Base(name), err), at, dir)}
		}
	}
	return nil
}

func checkTable(name string, topt table.Options) (err error) {
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
	closed = true
	return t.MmapFile.Close(-1)
}

// recoverDamage turns a panic while reading the store (a table damaged
// after it was opened: Badger decodes what it reads without checking it)
// into a *DamagedError; deferred by every read of a DB.
func (db *DB) recoverDamage(err *error) {
	if r := recover(); r != nil {
		*err = &DamagedError{Dir: db.dir, Err: fmt.Errorf("reading the store failed: %s", oneLine(fmt.Sprint(r)))}
	}
}
