package statedb_test

import (
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/benchtrace"
	"github.com/replaycheck/replaycheck/statedb"
)

// The benchmarks below need a 1M-event paxos trace and its database; they
// build them on first use (a minute or two) under $REPLAYCHECK_BENCH_DIR
// (default: $TMPDIR/replaycheck-bench) and reuse them. They run only when
// selected with -bench:
//
//	go test ./statedb -run '^$' -bench 1M -benchtime 200x
//	go test ./statedb -run '^$' -bench Index1M -benchtime 1x

const bigSteps = 1_000_000

// BenchmarkIndex1M builds the database of the 1M-event trace from scratch.
func BenchmarkIndex1M(b *testing.B) {
	trace := benchtrace.Paxos(b, bigSteps)
	dir := filepath.Join(b.TempDir(), "index.db")
	for b.Loop() {
		db, _, err := statedb.Ensure([]string{trace}, dir, statedb.Options{Registry: benchtrace.Registry, Force: true})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(db.Meta().IndexSeconds, "s/index")
		b.ReportMetric(float64(db.Meta().Fields)/bigSteps, "fields/step")
		db.Close()
	}
	size := statedb.SizeOnDisk(dir)
	b.ReportMetric(float64(size)/(1<<20), "MiB")
	b.ReportMetric(float64(size)/bigSteps, "B/step")
}

// BenchmarkReopen1M opens the up-to-date database (fingerprinting the
// trace file included).
func BenchmarkReopen1M(b *testing.B) {
	db, trace := benchtrace.PaxosDB(b, bigSteps)
	db.Close()
	for b.Loop() {
		db, res, err := statedb.Ensure([]string{trace}, "", statedb.Options{Registry: benchtrace.Registry})
		if err != nil || res.Built {
			b.Fatalf("reopen: %v %+v", err, res)
		}
		db.Close()
	}
}

// BenchmarkStateAt1M reads every node's state at a random step: what a
// jump shows.
func BenchmarkStateAt1M(b *testing.B) {
	db, _ := benchtrace.PaxosDB(b, bigSteps)
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	var worst time.Duration
	for b.Loop() {
		s := rng.IntN(db.Len())
		start := time.Now()
		for _, id := range db.Nodes() {
			if _, err := db.State(id, s); err != nil {
				b.Fatal(err)
			}
		}
		worst = max(worst, time.Since(start))
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
}

// BenchmarkHistory1M reads 200 versions of a hot field around a random
// step.
func BenchmarkHistory1M(b *testing.B) {
	db, _ := benchtrace.PaxosDB(b, bigSteps)
	defer db.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		vs, err := db.History("n3", "Leader.MaxSeen", rng.IntN(db.Len()), 100, 100)
		if err != nil || len(vs) == 0 {
			b.Fatal(err)
		}
	}
}

// BenchmarkBrowseWhileIndexing1M reads what a debugger's screen needs
// (41 steps of the timeline and every node's state at a random step
// indexed so far) while the database of the 1M-event trace is built in
// the background, as replay debug does on a first open. Each iteration
// is one screen, 20 ms after the last (ns/op counts the pause; mean-ms
// and max-ms do not); the build restarts when it ends. 2000 screens
// cover about a minute of indexing.
//
//	go test ./statedb -run '^$' -bench BrowseWhileIndexing1M -benchtime 2000x
func BenchmarkBrowseWhileIndexing1M(b *testing.B) {
	trace := benchtrace.Paxos(b, bigSteps)
	dir := filepath.Join(b.TempDir(), "browse.db")
	start := func() (*statedb.Building, chan error) {
		bg, err := statedb.StartBuild([]string{trace}, dir, statedb.Options{Registry: benchtrace.Registry})
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- bg.Run(nil) }()
		return bg, done
	}
	bg, done := start()
	defer func() { bg.Close() }()
	rng := rand.New(rand.NewPCG(1, 3))
	var worst, sum time.Duration
	n := 0
	for b.Loop() {
		time.Sleep(20 * time.Millisecond)
		select {
		case <-done: // finished: index again
			bg.Close()
			bg, done = start()
		default:
		}
		for bg.DB.Len() < 100 {
			time.Sleep(time.Millisecond)
		}
		db := bg.DB
		pos := 50 + rng.IntN(db.Len()-60)
		t0 := time.Now()
		if err := db.Steps(pos-20, pos+20, func(*statedb.Step) bool { return true }); err != nil {
			b.Fatal(err)
		}
		for _, id := range db.Nodes() {
			if _, err := db.State(id, pos); err != nil {
				b.Fatal(err)
			}
		}
		d := time.Since(t0)
		worst, sum, n = max(worst, d), sum+d, n+1
	}
	b.ReportMetric(float64(sum.Microseconds())/1000/float64(max(n, 1)), "mean-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-ms")
}
