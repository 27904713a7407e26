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
