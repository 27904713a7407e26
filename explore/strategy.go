package explore

import (
	"fmt"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/sim"
)

// A Strategy hands out one chooser per run and may learn from what the
// runs saw. The driver calls Next for a batch of runs, runs them (in
// parallel), then calls Done for each in run order, so a strategy sees
// the same calls in the same order whatever the parallelism, and the
// same seed gives the same exploration.
type Strategy interface {
	// Name is the strategy's name as --strategy gives it.
	Name() string
	// Describe names the strategy and its parameters.
	Describe() string
	// Next returns the chooser of the next run. false: nothing to run
	// until the outstanding runs are Done; with none outstanding, the
	// strategy's space is exhausted.
	Next() (sim.Chooser, bool)
	// Done reports a finished run, in run order.
	Done(Outcome)
}

// StateCounter is a strategy that counts the distinct states it visited.
type StateCounter interface {
	States() int
}

// Outcome is what a run saw, for strategies that learn.
type Outcome struct {
	Run     int
	Chooser sim.Chooser
	Steps   int  // events the run executed
	Failed  bool // a violation or a handler panic
}

// Params are a strategy's settings; zero values take the strategy's
// defaults.
type Params struct {
	// Seed names the exploration: the same seed, the same runs.
	Seed uint64
	// Depth: pct's bug depth d (default 3); the delaying explorers'
	// largest delay bound (default 5); bfs and dfs's bound on decisions
	// per execution (default 50).
	Depth int
	// Faults is how many crashes a run may inject (default 0). FailStop:
	// a crashed node stays down; otherwise it restarts after a time drawn
	// from the run's down range.
	Faults   int
	FailStop bool
	// Exhaustive makes a delaying explorer search every placement of
	// delays (SES) instead of sampling them (SS).
	Exhaustive bool
	// Samples is SS's number of runs in stratum 0; stratum db gets
	// Samples·2^db (default 4).
	Samples int
}

// Default depths.
const (
	DefaultPCTDepth    = 3
	DefaultDelayBound  = 5
	DefaultSearchDepth = 50
	DefaultSamples     = 4
)

// Names lists the strategies New knows.
func Names() []string {
	return []string{"random", "pct", "delay-rr", "delay-rtc", "delay-prr", "bfs", "dfs"}
}

// New builds the named strategy for runs under cfg (defaults applied: its
// down range and max-down bound injected crashes).
func New(name string, cfg sim.Config, p Params) (Strategy, error) {
	if p.Depth < 0 || p.Faults < 0 || p.Samples < 0 {
		return nil, fmt.Errorf("depth %d, faults %d, samples %d: want positive numbers (0: the default)", p.Depth, p.Faults, p.Samples)
	}
	s := settings{faults: p.Faults, down: [2]time.Duration{cfg.DownMin, cfg.DownMax}, failStop: p.FailStop, maxDown: cfg.MaxDown}
	if s.maxDown <= 0 {
		s.maxDown = max(1, (cfg.Nodes-1)/2)
	}
	if p.Exhaustive && !strings.HasPrefix(name, "delay-") {
		return nil, fmt.Errorf("exhaustive search is a mode of the delaying explorers (delay-rr, delay-rtc, delay-prr), not of %s", name)
	}
	switch name {
	case "random":
		return &randomStrategy{p: p, s: s}, nil
	case "pct":
		if p.Depth == 0 {
			p.Depth = DefaultPCTDepth
		}
		return &pctStrategy{p: p, s: s}, nil
	case "delay-rr", "delay-rtc", "delay-prr":
		if p.Depth == 0 {
			p.Depth = DefaultDelayBound
		}
		if p.Samples == 0 {
			p.Samples = DefaultSamples
		}
		base := strings.TrimPrefix(name, "delay-")
		if p.Exhaustive {
			return newSES(base, p, s), nil
		}
		return &ssStrategy{base: base, p: p, s: s}, nil
	case "bfs", "dfs":
		if p.Depth == 0 {
			p.Depth = DefaultSearchDepth
		}
		return newSearch(name, p, s), nil
	}
	return nil, fmt.Errorf("unknown strategy %q (known: %s)", name, strings.Join(Names(), ", "))
}
