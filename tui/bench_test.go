package tui

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/benchtrace"
)

// Responsiveness on a 1M-event paxos trace, without the terminal: a jump
// or a step back followed by computing every panel's contents for a
// 180x50 screen. "db" reads the trace database only; "watch" also moves
// the replay cursor (checkpoints every 250 steps, all taken) and
// evaluates a watch over every node. The trace and its database are built
// on first use (see internal/benchtrace) and reused; run with
//
//	go test ./tui -run '^$' -bench 1M -benchtime 200x

const bigSteps = 1_000_000

func bigModel(b *testing.B, watch bool) *Model {
	db, trace := benchtrace.PaxosDB(b, bigSteps)
	b.Cleanup(func() { db.Close() })
	m, err := New(Config{DB: db, Traces: []string{trace}, Registry: benchtrace.Registry, At: 0})
	if err != nil {
		b.Fatal(err)
	}
	if watch {
		start := time.Now()
		m.AddWatch("[a.AcceptedRound for a in Agent]")
		m.RunTasks() // the warm-up: every checkpoint taken
		b.Logf("trace loaded and checkpoints taken in %v", time.Since(start))
	}
	return m
}

// redraw computes what every panel shows.
func redraw(m *Model) {
	m.Timeline(21)
	m.EventLines(104, 5)
	m.Flow(104, 21)
	m.State(70, 26)
	m.Violations(70, 8)
	m.Watches(70, 8)
	m.StatusLines(180)
}

func benchMoves(b *testing.B, watch bool, move func(m *Model, rng *rand.Rand)) {
	m := bigModel(b, watch)
	rng := rand.New(rand.NewPCG(3, 4))
	var times []time.Duration
	for b.Loop() {
		start := time.Now()
		move(m, rng)
		redraw(m)
		times = append(times, time.Since(start))
		if m.err {
			b.Fatal(m.status)
		}
	}
	reportTimes(b, times)
}

// reportTimes adds the 99th percentile and the worst case.
func reportTimes(b *testing.B, times []time.Duration) {
	slices.Sort(times)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(times[len(times)*99/100]), "p99-ms")
	b.ReportMetric(ms(times[len(times)-1]), "max-ms")
}

func BenchmarkJump1M(b *testing.B) {
	jump := func(m *Model, rng *rand.Rand) { m.seekOrSay(rng.IntN(bigSteps)) }
	b.Run("db", func(b *testing.B) { benchMoves(b, false, jump) })
	b.Run("watch", func(b *testing.B) { benchMoves(b, true, jump) })
}

// BenchmarkStepBack1M steps back from random positions: each iteration
// jumps (untimed) and then steps back (timed).
func BenchmarkStepBack1M(b *testing.B) {
	back := func(b *testing.B, watch bool) {
		m := bigModel(b, watch)
		rng := rand.New(rand.NewPCG(5, 6))
		var times []time.Duration
		for b.Loop() {
			b.StopTimer()
			m.seekOrSay(1 + rng.IntN(bigSteps-1))
			b.StartTimer()
			start := time.Now()
			m.Step(-1)
			redraw(m)
			times = append(times, time.Since(start))
		}
		reportTimes(b, times)
	}
	b.Run("db", func(b *testing.B) { back(b, false) })
	b.Run("watch", func(b *testing.B) { back(b, true) })
}
