package statedb

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cutTables truncates every table file of a database to half its size, as
// a full disk or a copy interrupted halfway leaves it.
func cutTables(t *testing.T, dir string) []string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "part-*", "*.sst"))
	cat, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	names = append(names, cat...)
	if len(names) == 0 {
		t.Fatalf("no table files in %s", dir)
	}
	for _, n := range names {
		if err := os.Truncate(n, badCut(t, n)); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// badCut is a length, about half of the table file, at which the cut file's
// last four bytes (where Badger reads the length of the table's checksum)
// say more than the file holds: the cut that made Badger panic.
func badCut(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for n := len(b) / 2; n > 8; n-- {
		if int(binary.BigEndian.Uint32(b[n-4:n])) > n {
			return int64(n)
		}
	}
	t.Fatalf("no cut of %s makes its checksum length overflow", name)
	return 0
}

// A table file cut short made Badger panic in a goroutine of its own while
// opening the database, killing the process; it is a *DamagedError naming
// the file, and Ensure rebuilds the database.
func TestATruncatedTableIsDamageNotAPanic(t *testing.T) {
	trace, _ := demo(t)
	db, _ := ensure(t, []string{trace}, Options{})
	dir := db.Dir()
	db.Close()
	names := cutTables(t, dir)

	_, err := Open(dir)
	var damaged *DamagedError
	if !errors.As(err, &damaged) {
		t.Fatalf("opening a database with a truncated table: %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, filepath.Base(names[0])) || strings.Contains(msg, "\n") || !strings.Contains(msg, "--force") {
		t.Fatalf("the error should be one line naming the table and the fix: %q", msg)
	}

	db, res, err := Ensure([]string{trace}, "", Options{Registry: registry})
	if err != nil {
		t.Fatalf("a database with a truncated table was not rebuilt: %v", err)
	}
	defer db.Close()
	if !res.Built || !strings.HasPrefix(res.Why, "damaged") {
		t.Fatalf("opening a damaged database: %+v", res)
	}
	if ns, err := db.State("n1", db.Len()-1); err != nil || len(ns.Leaves) == 0 {
		t.Fatalf("the rebuilt database's state: %v %+v", err, ns)
	}
}

// Bytes flipped inside a data block of a part's table: Badger's reads
// skip a block that fails its checksum as if its keys were absent, so a
// node's state read as its initial one, exit 0. Each block is verified
// when the part is first opened: the damage is a *DamagedError.
func TestAFlippedBlockIsDamageNotAnAbsentKey(t *testing.T) {
	trace, _ := demo(t)
	db, _ := ensure(t, []string{trace}, Options{})
	dir, nodes, last := db.Dir(), db.Meta().Nodes, db.Len()-1
	db.Close()
	// Read once whole: its tables are verified and remembered, so the
	// damage below must be noticed as a change.
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range nodes {
		if _, err := db.State(id, last); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	if stamps, _ := filepath.Glob(filepath.Join(dir, "part-*", verifiedName)); len(stamps) == 0 {
		t.Fatal("no part remembers its verified tables")
	}
	names, _ := filepath.Glob(filepath.Join(dir, "part-*", "*.sst"))
	if len(names) == 0 {
		t.Fatalf("no table files in the parts of %s", dir)
	}
	for _, name := range names {
		f, err := os.OpenFile(name, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		at := st.Size() / 4 // among the data blocks, well before the index
		b := make([]byte, 8)
		f.ReadAt(b, at)
		for i := range b {
			b[i] ^= 0x5a
		}
		f.WriteAt(b, at)
		f.Close()
	}
	db, err = Open(dir)
	var damaged *DamagedError
	if err == nil {
		defer db.Close()
		for _, id := range nodes {
			if _, err = db.State(id, last); err != nil {
				break
			}
		}
	}
	if !errors.As(err, &damaged) {
		t.Fatalf("reading states through a flipped block: %v", err)
	}
}
