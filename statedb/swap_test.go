package statedb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenNeverMixesTwoDatabases: a build that finishes renames its
// database into place while readers open the folder. Open reads the
// description and then each part by path, so a swap in between paired
// one database's description with another's parts, and reads failed
// ("Key not found") or, worse, read the other database. Here two
// databases of one trace, one of a single part and one of many, are
// swapped back and forth as a finishing build swaps (swapIn) as fast as
// it goes: every Open either fails or gives a database whose every step
// and state reads.
func TestOpenNeverMixesTwoDatabases(t *testing.T) {
	trace, _ := demo(t)
	dir := t.TempDir()
	one, many := filepath.Join(dir, "one.db"), filepath.Join(dir, "many.db")
	buildAt(t, trace, one, 0).Close()
	buildAt(t, trace, many, 64<<10).Close()
	if err := exchangeDirs(one, many); errors.Is(err, errNoExchange) {
		t.Skip("this system cannot exchange two directories' names at once; swapIn renames twice")
	} else if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "t.db")
	if err := os.Rename(one, target); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	swapping := make(chan struct{})
	go func() {
		defer close(swapping)
		for !stop.Load() {
			if err := exchangeDirs(target, many); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	defer func() { stop.Store(true); <-swapping }()
	opened := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
		db, err := Open(target)
		if err != nil {
			continue
		}
		opened++
		for s := 0; s < db.Len(); s += 97 {
			if _, err := db.Step(s); err != nil {
				t.Fatalf("an Open that succeeded (%d parts) cannot read step #%d: %v", len(db.parts.list), s, err)
			}
			if _, err := db.State("n1", s); err != nil && !errors.Is(err, ErrClosed) {
				t.Fatalf("an Open that succeeded (%d parts) cannot read the state at #%d: %v", len(db.parts.list), s, err)
			}
		}
		db.Close()
	}
	if opened == 0 {
		t.Fatal("no Open succeeded while the databases were swapped")
	}
	t.Logf("%d opens", opened)
}

// TestDamageFoundThroughTheHandleNamesTheFolder: a database opened
// through its folder's handle (/proc/self/fd) reports damage as damage,
// naming the folder as the user gave it, not the handle's path, and
// leaves no file open; a part copied from another database is damage too.
func TestDamageFoundThroughTheHandleNamesTheFolder(t *testing.T) {
	trace, _ := demo(t)
	dir := t.TempDir()
	good, other := filepath.Join(dir, "good.db"), filepath.Join(dir, "other.db")
	buildAt(t, trace, good, 64<<10).Close()
	buildAt(t, trace, other, 64<<10).Close()
	openFiles := func() int {
		es, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd: the folder is not opened through a handle here")
		}
		return len(es)
	}
	harms := map[string]func(db string) error{
		"part removed": func(db string) error { return os.RemoveAll(partDir(db, 3)) },
		"part manifest garbage": func(db string) error {
			return os.WriteFile(filepath.Join(partDir(db, 3), "MANIFEST"), []byte("not a manifest"), 0o644)
		},
		"catalog manifest garbage": func(db string) error {
			return os.WriteFile(filepath.Join(db, "MANIFEST"), []byte("not a manifest"), 0o644)
		},
		"part of another build": func(db string) error {
			if err := os.RemoveAll(partDir(db, 3)); err != nil {
				return err
			}
			return os.CopyFS(partDir(db, 3), os.DirFS(partDir(other, 3)))
		},
	}
	for what, harm := range harms {
		db := harmedCopy(t, good, what, harm)
		before := openFiles()
		d, err := Open(db)
		if err == nil {
			d.Close()
			t.Errorf("%s: opened", what)
			continue
		}
		var damaged *DamagedError
		if !errors.As(err, &damaged) || !strings.Contains(err.Error(), db) || strings.Contains(err.Error(), "/proc/self") {
			t.Errorf("%s: %v", what, err)
		}
		if after := openFiles(); after != before {
			t.Errorf("%s: %d files open before Open, %d after", what, before, after)
		}
	}
}

// A database named by a symbolic link is built where the link points and
// the link stays: a rebuild swapped a folder in for the link, leaving the
// old database stale behind it. A link that leads nowhere is named.
func TestDatabaseBehindASymlink(t *testing.T) {
	dir := t.TempDir()
	trace := simulate(t, dir, "p.lz4", "", 1, nil)
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink("real", link); err != nil {
		t.Fatal(err)
	}
	for range 2 { // built, then rebuilt (--force)
		db, _, err := Ensure([]string{trace}, link, Options{Registry: registry, Force: true})
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link was replaced: %v %v", fi.Mode(), err)
		}
		if _, err := Open(real); err != nil {
			t.Fatalf("no database where the link points: %v", err)
		}
	}
	dangling := filepath.Join(dir, "dangling.db")
	if err := os.Symlink("missing", dangling); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Ensure([]string{trace}, dangling, Options{Registry: registry}); err == nil || !strings.Contains(err.Error(), "symbolic link to missing") {
		t.Fatalf("a dangling link: %v", err)
	}
	loop := filepath.Join(dir, "loop.db")
	if err := os.Symlink("loop.db", loop); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Ensure([]string{trace}, loop, Options{Registry: registry}); err == nil || strings.Contains(err.Error(), "<nil>") || !strings.Contains(err.Error(), "symbolic link to loop.db") {
		t.Fatalf("a link to itself: %v", err)
	}
}
