package statedb

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Any number of debuggers read one database: a second open while the
// first is still open must work (issue 10, item 13: it failed with
// Badger's "Cannot acquire directory lock").
func TestManyReadersShareADatabase(t *testing.T) {
	trace, script := demo(t)
	db1, res := ensure(t, []string{trace}, Options{Preds: script})
	defer db1.Close()
	if !res.Built {
		t.Fatalf("first open: %+v", res)
	}
	var dbs []*DB
	for range 3 {
		db, res, err := Ensure([]string{trace}, "", Options{Registry: registry, Preds: script})
		if err != nil {
			t.Fatalf("a second reader could not open the database: %v", err)
		}
		if res.Built || res.Checked {
			t.Fatalf("a second reader rebuilt or re-checked: %+v", res)
		}
		dbs = append(dbs, db)
	}
	for _, db := range append(dbs, db1) {
		s, err := db.Step(269)
		if err != nil || s.Node != "n7" {
			t.Fatalf("step #269 read by a reader: %+v %v", s, err)
		}
		if p := db.Predicates(); p == nil || len(p.Violations) != 1 {
			t.Fatalf("a reader's predicate results: %+v", p)
		}
	}
	for _, db := range dbs {
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshot lists a directory's files with size and modification time.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		info, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		if !d.IsDir() {
			out = append(out, fmt.Sprintf("%s %d %s", strings.TrimPrefix(p, dir), info.Size(), info.ModTime()))
		}
		return nil
	})
	return out
}

// Opening a finished database changes nothing in it, so a reader killed
// at any moment leaves nothing to recover (item 13: reopening after a
// killed terminal failed "while opening memtables").
func TestReadersNeverWriteTheDatabase(t *testing.T) {
	trace, script := demo(t)
	db, _ := ensure(t, []string{trace}, Options{Preds: script})
	dir := db.Dir()
	db.Close()
	before := snapshot(t, dir)
	time.Sleep(10 * time.Millisecond) // a write would show in the mtimes
	db, _ = ensure(t, []string{trace}, Options{Preds: script})
	if _, err := db.State("n5", 263); err != nil {
		t.Fatal(err)
	}
	// A reader that dies without closing: the next open works.
	db2, _ := ensure(t, []string{trace}, Options{Preds: script})
	if _, err := db2.History("n5", "Leader.Phase", 263, 10, 10); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, dir); !slices.Equal(before, after) {
		t.Fatalf("opening the database wrote to it:\nbefore %v\nafter  %v", before, after)
	}
	db.Close()
	db2.Close()
	if after := snapshot(t, dir); !slices.Equal(before, after) {
		t.Fatalf("closing the database wrote to it:\nbefore %v\nafter  %v", before, after)
	}
}

// index --force while a debugger reads: the reader keeps its database
// (built beside and swapped in, the old one removed once nobody reads it).
func TestForceRebuildKeepsWhatAReaderUses(t *testing.T) {
	trace, script := demo(t)
	db1, _ := ensure(t, []string{trace}, Options{Preds: script})
	want, err := db1.State("n5", 263)
	if err != nil {
		t.Fatal(err)
	}
	used, err := os.Stat(db1.Dir())
	if err != nil {
		t.Fatal(err)
	}
	db2, res, err := Ensure([]string{trace}, "", Options{Registry: registry, Preds: script, Force: true})
	if err != nil {
		t.Fatalf("index --force with a reader open: %v", err)
	}
	if !res.Built {
		t.Fatalf("--force did not rebuild: %+v", res)
	}
	// The directory the first reader uses is still there.
	kept := false
	entries, _ := os.ReadDir(filepath.Dir(trace))
	for _, e := range entries {
		if st, err := os.Stat(filepath.Join(filepath.Dir(trace), e.Name())); err == nil && os.SameFile(st, used) {
			kept = true
		}
	}
	if !kept {
		t.Fatal("index --force deleted the database a reader uses")
	}
	// The first reader still reads everything.
	for _, pos := range []int{0, 263, db1.Len() - 1} {
		got, err := db1.State("n5", pos)
		if err != nil {
			t.Fatalf("the first reader after the rebuild, at #%d: %v", pos, err)
		}
		if pos == 263 && !slices.Equal(got.Leaves, want.Leaves) {
			t.Fatalf("the first reader's state changed under it")
		}
	}
	if _, err := db1.History("n5", "Leader.Phase", 263, 100, 100); err != nil {
		t.Fatalf("the first reader's history after the rebuild: %v", err)
	}
	if err := db1.Close(); err != nil {
		t.Fatalf("closing the first reader: %v", err)
	}
	if _, err := db2.Step(269); err != nil {
		t.Fatal(err)
	}
	db2.Close()
	// The next build finds the old database unused and removes it.
	db3, _, err := Ensure([]string{trace}, "", Options{Registry: registry, Preds: script, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	db3.Close()
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(trace), ".*")); len(left) != 0 {
		t.Fatalf("left beside the trace: %v", left)
	}
}

// Killed builds leave partial databases: the next build of the same
// database removes those no live process holds (item 13: 317 MB after
// four kills).
func TestStalePartialDatabasesAreRemoved(t *testing.T) {
	trace, script := demo(t)
	dir := filepath.Dir(trace)
	old := time.Now().Add(-time.Hour)
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "000001.vlog"), make([]byte, 1<<20), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
		return p
	}
	stale1 := mk(".demo.lz4.db.partial-1234")
	stale2 := mk(".demo.lz4.db.partial-99")
	os.Chtimes(stale2, time.Now(), time.Now()) // killed a moment ago
	// One a live build holds (its lock taken): it stays.
	live := mk(".demo.lz4.db.partial-777")
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ok, err := tryLock(f, false); !ok || err != nil {
		t.Fatal(err)
	}
	// Another trace's partial database is not this build's business.
	other := mk(".other.lz4.db.partial-5")
	// Nor are the user's own files and folders whose names merely look
	// like leftovers (index removed both, notes and all).
	dated := mk(".demo.lz4.db.old-2024-05-01")
	notes := mk(".demo.lz4.db.old-2")
	os.WriteFile(filepath.Join(notes, "notes.txt"), []byte("precious"), 0o644)
	os.Chtimes(notes, old, old)
	aside := mk(".demo.lz4.db.old-4242-1764451200000000000") // moved aside by a build: ours
	db, _ := ensure(t, []string{trace}, Options{Preds: script})
	db.Close()
	for _, p := range []string{stale1, stale2, aside} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("stale partial database %s was not removed", filepath.Base(p))
		}
	}
	for _, p := range []string{live, other, dated, notes} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}

// One writer builds: a second build of the same database waits for the
// first, says whom it waits for, and then uses what the first built.
func TestASecondBuilderWaitsForTheFirst(t *testing.T) {
	trace, script := demo(t)
	dir := PathFor([]string{trace})
	unlock, _, err := lockBuild(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan int, 1)
	type result struct {
		db  *DB
		res *Opened
		err error
	}
	done := make(chan result, 1)
	go func() {
		db, res, err := Ensure([]string{trace}, "", Options{Registry: registry, Preds: script,
			Waiting: func(pid int) { waiting <- pid }})
		done <- result{db, res, err}
	}()
	select {
	case pid := <-waiting:
		if pid != os.Getpid() {
			t.Errorf("waiting for pid %d, want %d", pid, os.Getpid())
		}
	case r := <-done:
		t.Fatalf("a second builder did not wait: %+v %v", r.res, r.err)
	case <-time.After(20 * time.Second):
		t.Fatal("a second builder neither waited nor finished")
	}
	select {
	case r := <-done:
		t.Fatalf("the second builder went on while the first held the lock: %+v %v", r.res, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	unlock()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.db.Close()
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(trace), ".*")); len(left) != 0 {
		t.Fatalf("left beside the trace: %v", left)
	}
}

// A database that cannot be read (here a memtable a killed writer left,
// as older versions that opened databases read-write could) is rebuilt,
// not an error (item 13: "while opening memtables").
func TestADamagedDatabaseIsRebuilt(t *testing.T) {
	trace, script := demo(t)
	db, _ := ensure(t, []string{trace}, Options{Preds: script})
	dir := db.Dir()
	db.Close()
	b := make([]byte, 1<<20)
	for i := 20; i < len(b); i++ {
		b[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "00005.mem"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	db, res, err := Ensure([]string{trace}, "", Options{Registry: registry, Preds: script})
	if err != nil {
		t.Fatalf("a damaged database was not rebuilt: %v", err)
	}
	defer db.Close()
	if !res.Built || !strings.HasPrefix(res.Why, "damaged") {
		t.Fatalf("opening a damaged database: %+v", res)
	}
	if p := db.Predicates(); p == nil || len(p.Violations) == 0 {
		t.Fatalf("the rebuilt database's predicate results: %+v", p)
	}
}
