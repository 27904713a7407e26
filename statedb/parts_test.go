package statedb

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
)

// buildAt builds the database of trace at dir with parts of partBytes.
func buildAt(t *testing.T, trace, dir string, partBytes int) *DB {
	t.Helper()
	db, _, err := Ensure([]string{trace}, dir, Options{Registry: registry, PartBytes: partBytes})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A database in many parts answers every read as one in a single part:
// each step, every node's state at every step, every field's whole
// history and windows of it around steps at and beside the parts'
// borders, and walks of the step index across borders both ways.
func TestPartsReadAsOneStore(t *testing.T) {
	trace, _ := demo(t)
	dir := t.TempDir()
	one := buildAt(t, trace, filepath.Join(dir, "one.db"), 0)
	many := buildAt(t, trace, filepath.Join(dir, "many.db"), 64<<10)
	if got := len(many.Meta().Parts); got < 8 {
		t.Fatalf("a database of %d steps in parts of 64 KiB has %d parts", many.Len(), got)
	}
	if testing.Verbose() {
		t.Logf("%d parts: %v", len(many.Meta().Parts), many.Meta().Parts)
	}
	if got := len(one.Meta().Parts); got != 1 {
		t.Fatalf("the default part size made %d parts of a small trace", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "many.db")); len(entries) == 0 {
		t.Fatal("no database written")
	}
	sameReads(t, many, one)
}

// batchBuilt builds trace's database at dir as the debugger does, through
// write batches readable as they go (StartBuild), in parts of partBytes.
func batchBuilt(t *testing.T, trace, dir string, partBytes int) *DB {
	t.Helper()
	bg, err := StartBuild([]string{trace}, dir, Options{Registry: registry, PartBytes: partBytes})
	if err != nil {
		t.Fatal(err)
	}
	defer bg.Close()
	if err := bg.Run(nil); err != nil {
		t.Fatal(err)
	}
	db, err := bg.Finish()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A database built by Ensure (replay index) answers every read as one
// built in the background while browsed (StartBuild: the debugger's), in
// one part and in many.
func TestEnsuredReadsAsBuiltInTheBackground(t *testing.T) {
	trace, _ := demo(t)
	dir := t.TempDir()
	for _, size := range []int{0, 64 << 10} {
		streamed := buildAt(t, trace, filepath.Join(dir, fmt.Sprintf("s%d.db", size)), size)
		batched := batchBuilt(t, trace, filepath.Join(dir, fmt.Sprintf("b%d.db", size)), size)
		if !slices.Equal(streamed.Meta().Parts, batched.Meta().Parts) || streamed.Meta().Fields != batched.Meta().Fields {
			t.Fatalf("parts %v and %v, fields %d and %d", streamed.Meta().Parts, batched.Meta().Parts, streamed.Meta().Fields, batched.Meta().Fields)
		}
		sameReads(t, streamed, batched)
	}
}

// sameReads wants every read of many answered as one answers it: each
// step, every node's state at every step, every field's whole history and
// windows of it around steps at and beside many's part borders, and walks
// of the step index across borders both ways.
func sameReads(t *testing.T, many, one *DB) {
	t.Helper()
	n := one.Len()
	if many.Len() != n {
		t.Fatalf("%d steps, want %d", many.Len(), n)
	}
	all := func(db *DB, from, to int) []*Step {
		var out []*Step
		if err := db.Steps(from, to, func(s *Step) bool { out = append(out, s); return true }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	borders := many.Meta().Parts[1:]
	walks := [][2]int{{0, n - 1}, {n - 1, 0}}
	for _, b := range borders {
		walks = append(walks, [2]int{b - 1, b}, [2]int{b, b - 1}, [2]int{b - 3, min(b+3, n-1)}, [2]int{min(b+3, n-1), b - 3})
	}
	for _, w := range walks {
		if got, want := all(many, w[0], w[1]), all(one, w[0], w[1]); !reflect.DeepEqual(got, want) || len(got) == 0 {
			t.Fatalf("steps %d..%d: %d steps, want %d", w[0], w[1], len(got), len(want))
		}
	}
	// Stopping early in a part before the last.
	if len(borders) > 0 {
		var got []int
		many.Steps(n-1, 0, func(s *Step) bool { got = append(got, s.Step); return s.Step > borders[0] })
		if got[len(got)-1] != borders[0] {
			t.Fatalf("a backward walk stopped at #%d, want #%d", got[len(got)-1], borders[0])
		}
	}
	paths := map[string]bool{}
	for pos := -1; pos < n; pos++ {
		if pos >= 0 {
			a, errA := many.Step(pos)
			b, errB := one.Step(pos)
			if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("step #%d: %v %v", pos, errA, errB)
			}
		}
		for _, id := range one.Nodes() {
			a, errA := many.State(id, pos)
			b, errB := one.State(id, pos)
			if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
				t.Fatalf("state of %s at #%d:\n parts: %+v %v\n one:   %+v %v", id, pos, a, errA, b, errB)
			}
			if b != nil {
				for _, l := range b.Leaves {
					paths[string(id)+"\x00"+l.Path] = true
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for key := range paths {
		id, path, _ := strings.Cut(key, "\x00")
		positions := []int{n - 1, rng.IntN(n)}
		for _, b := range borders[:min(3, len(borders))] {
			positions = append(positions, b-1, b)
		}
		for _, pos := range positions {
			for _, window := range [][2]int{{1 << 20, 0}, {2, 2}, {0, 3}, {1, 1 << 20}} {
				a, errA := many.History(node.ID(id), path, pos, window[0], window[1])
				b, errB := one.History(node.ID(id), path, pos, window[0], window[1])
				if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
					t.Fatalf("history of %s %s at #%d %v:\n parts: %v %v\n one:   %v %v", id, path, pos, window, a, errA, b, errB)
				}
			}
		}
	}
}

// Readers browse a database while it is built in many parts, each of
// which is closed for writing and reopened for reading as the next
// starts; every read of the steps indexed so far must succeed and agree
// with the finished database.
func TestBrowsePartsWhileTheyAreBuilt(t *testing.T) {
	trace, _ := demo(t)
	dir := t.TempDir()
	want := buildAt(t, trace, filepath.Join(dir, "one.db"), 0)
	bg, err := StartBuild([]string{trace}, filepath.Join(dir, "many.db"), Options{Registry: registry, PartBytes: 64 << 10, PublishEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer bg.Close()
	done := make(chan error, 1)
	go func() { done <- bg.Run(nil) }()
	rng := rand.New(rand.NewPCG(5, 6))
	reads := 0
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		n := bg.DB.Len()
		if n == 0 {
			continue
		}
		pos := rng.IntN(n)
		for _, id := range want.Nodes() {
			got, err := bg.DB.State(id, pos)
			w, _ := want.State(id, pos)
			if err != nil || !reflect.DeepEqual(got, w) {
				t.Fatalf("state of %s at #%d while building: %v", id, pos, err)
			}
		}
		var steps []int
		if err := bg.DB.Steps(pos, 0, func(s *Step) bool { steps = append(steps, s.Step); return len(steps) < 50 }); err != nil {
			t.Fatal(err)
		}
		if len(steps) != min(50, pos+1) || steps[len(steps)-1] != pos-len(steps)+1 {
			t.Fatalf("steps back from #%d while building: %v", pos, steps)
		}
		reads++
	}
	if reads < 10 {
		t.Fatalf("only %d reads during the build", reads)
	}
	db, err := bg.Finish()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if parts := db.Meta().Parts; len(parts) < 8 || !slices.IsSorted(parts) {
		t.Fatalf("parts %v", parts)
	}
	tr, err := replay.Load(trace)
	if err != nil {
		t.Fatal(err)
	}
	if db.Len() != tr.Len() {
		t.Fatalf("%d steps", db.Len())
	}
}

// A database of the previous layout (everything in the folder's own
// store, schema 2) is not read as this one: Open says it was made by
// another release, and Ensure rebuilds it.
func TestADatabaseOfTheOldLayoutIsRebuilt(t *testing.T) {
	trace, _ := demo(t)
	dir := filepath.Join(t.TempDir(), "old.db")
	bdb, err := badger.OpenManaged(buildOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	old := &DB{dir: dir, cat: bdb}
	if err := old.putMeta(Meta{Schema: 2, Complete: true, Steps: 10, Nodes: []node.ID{"n1"}}); err != nil {
		t.Fatal(err)
	}
	if err := bdb.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); !errors.Is(err, ErrOtherSchema) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("opening a database of schema 2: %v", err)
	}
	db, res, err := Ensure([]string{trace}, dir, Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !res.Built || res.Why != "made by another release" {
		t.Fatalf("Ensure over a database of schema 2: %+v", res)
	}
	if ns, err := db.State("n1", db.Len()-1); err != nil || len(ns.Leaves) == 0 {
		t.Fatalf("the rebuilt database's state: %v %+v", err, ns)
	}
}

// A part that is missing, or whose manifest or tables are, is damage found
// when the database is opened (Ensure rebuilds it), not an error in the
// middle of a later read; so is a description whose parts are not
// increasing steps. Open took each part's tables alone for the part.
func TestAMissingPartIsDamage(t *testing.T) {
	trace, _ := demo(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	buildAt(t, trace, good, 64<<10).Close()
	damage := map[string]func(db string) error{
		"part removed":     func(db string) error { return os.RemoveAll(partDir(db, 3)) },
		"manifest removed": func(db string) error { return os.Remove(filepath.Join(partDir(db, 3), "MANIFEST")) },
		"tables removed": func(db string) error {
			names, _ := filepath.Glob(filepath.Join(partDir(db, 3), "*.sst"))
			if len(names) == 0 {
				return errors.New("no tables")
			}
			for _, n := range names {
				os.Remove(n)
			}
			return nil
		},
	}
	for what, harm := range damage {
		db := harmedCopy(t, good, what, harm)
		var damaged *DamagedError
		if d, err := Open(db); !errors.As(err, &damaged) {
			if err == nil {
				d.Close()
			}
			t.Fatalf("%s: Open: %v, want a *DamagedError", what, err)
		}
		d, res, err := Ensure([]string{trace}, db, Options{Registry: registry})
		if err != nil || !res.Built || !strings.HasPrefix(res.Why, "damaged") {
			t.Fatalf("%s: Ensure did not rebuild: %v %+v", what, err, res)
		}
		d.Close()
	}
	// A description whose parts are out of order.
	bdb, err := badger.OpenManaged(buildOptions(filepath.Join(dir, "meta.db")))
	if err != nil {
		t.Fatal(err)
	}
	bad := &DB{dir: filepath.Join(dir, "meta.db"), cat: bdb}
	if err := bad.putMeta(Meta{Schema: Schema, Complete: true, Steps: 100, Parts: []int{0, 60, 30}}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	var damaged *DamagedError
	if _, err := Open(bad.dir); !errors.As(err, &damaged) || !strings.Contains(err.Error(), "not increasing") {
		t.Fatalf("parts out of order: %v", err)
	}
}

// A read in the function Steps calls, while a build is closing a part,
// returns: Steps held its lock while calling it, the build waited for the
// lock, and the nested read for the build.
func TestReadsInsideStepsDoNotBlockABuild(t *testing.T) {
	trace, _ := demo(t)
	bg, err := StartBuild([]string{trace}, filepath.Join(t.TempDir(), "b.db"), Options{Registry: registry, PartBytes: 32 << 10, PublishEvery: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer bg.Close()
	done := make(chan error, 1)
	go func() { done <- bg.Run(nil) }()
	for bg.DB.Len() < 10 {
		time.Sleep(time.Millisecond)
	}
	returned := make(chan error, 1)
	go func() {
		returned <- bg.DB.Steps(0, 5, func(s *Step) bool {
			time.Sleep(50 * time.Millisecond) // the build reaches a part's end meanwhile
			_, err := bg.DB.State(s.Node, s.Step)
			return err == nil
		})
	}()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a read inside Steps' function never returned while the database was built")
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Reads after Close fail with ErrClosed; they reopened the parts' stores,
// which nothing closed again.
func TestReadsAfterCloseFail(t *testing.T) {
	trace, _ := demo(t)
	db := buildAt(t, trace, filepath.Join(t.TempDir(), "c.db"), 64<<10)
	db.Close()
	if _, err := db.State("n1", db.Len()-1); !errors.Is(err, ErrClosed) {
		t.Fatalf("State after Close: %v", err)
	}
	if _, err := db.History("n1", StatusPath, db.Len()-1, 10, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("History after Close: %v", err)
	}
}

// TestANegativePartSizeMeansTheDefault: Options.PartBytes below zero is
// the default size, not a part per step.
func TestANegativePartSizeMeansTheDefault(t *testing.T) {
	trace, _ := demo(t)
	db := buildAt(t, trace, filepath.Join(t.TempDir(), "neg.db"), -1)
	defer db.Close()
	if n := len(db.Meta().Parts); n != 1 {
		t.Fatalf("PartBytes -1 made %d parts of a small trace, want 1", n)
	}
}

// harmedCopy copies the database good beside it, named after what harm
// does to the copy, and harms it.
func harmedCopy(t *testing.T, good, what string, harm func(db string) error) string {
	t.Helper()
	db := filepath.Join(filepath.Dir(good), strings.ReplaceAll(what, " ", "-")+".db")
	if err := os.CopyFS(db, os.DirFS(good)); err != nil {
		t.Fatal(err)
	}
	if err := harm(db); err != nil {
		t.Fatal(err)
	}
	return db
}

// Fields lists every field a node ever had, across parts, those removed
// by their last version too: the names a mistyped field's nearest come
// from (they came from two states, and missed fields of the run's
// middle).
func TestFieldsListsEveryFieldANodeHad(t *testing.T) {
	trace, _ := demo(t)
	db := buildAt(t, trace, filepath.Join(t.TempDir(), "f.db"), 64<<10)
	for _, id := range db.Nodes() {
		fields, err := db.Fields(id)
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, f := range fields {
			have[f] = true
		}
		gone := 0
		last, _ := db.State(id, db.Len()-1)
		now := map[string]bool{}
		for _, l := range last.Leaves {
			now[l.Path] = true
		}
		for pos := 0; pos < db.Len(); pos += 97 {
			ns, err := db.State(id, pos)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ns.Leaves {
				if !have[l.Path] {
					t.Fatalf("%s had %s at #%d; Fields lists %d fields without it", id, l.Path, pos, len(fields))
				}
				if !now[l.Path] {
					gone++
				}
			}
		}
		if id == "n1" && gone == 0 {
			t.Fatalf("n1 has no field that existed only before the end: the test shows nothing")
		}
	}
}
