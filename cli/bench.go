package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/bench"
	"github.com/replaycheck/replaycheck/scripts"
)

func (a *App) benchCmd() *cobra.Command {
	var quick, asJSON bool
	var events, seekEvents, jobsEvents int
	var only []string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the performance targets on this machine, as ratios",
		Long: `Measure what the design promises, each as a ratio against a baseline
measured in the same run, so the numbers mean the same on any machine:

  simulate   paxos events/s with per-event state hashes vs without
  replay     decode + re-execute vs merely decoding the trace (target <= 3x),
             without and with state-hash comparison
  check      paxos with scripts/paxos.star vs replay alone
  scaling    ring-consistency checking per step: 1,000 vs 10 members (target <= 2x)
  seek       cursor seek to random steps of a --seek-events trace after one
             indexing pass (target <= 100 ms at 1,000,000 events)
  nodes      chord with 10,000 nodes vs 10 (2^16 ring positions, 200,000
             events): simulate, verify and check scripts/chord.star per
             event, best of 3 rounds of both sizes (target <= 2x each);
             and the check against a tenth of the nodes, a ring that is
             also still joining at the end (10 nodes settle early)
  logs       raftkv replay cost per step in the last tenth of a 200,000-
             event run vs the first tenth (target <= 1.5x), with spaced
             state hashes and with a hash after every event
  jobs       check --jobs 2 vs --jobs 1 of a --jobs-events chord trace
             (target >= 1.6x faster on 2 idle cores), and the ceiling
             two cores give that check here: two whole checks at once
             against one alone (no split of one check can beat it)
  index      replay index of a paxos trace of half --events against replay
             verify of it (target <= 3x), and of a raftkv trace whose log grows
             all along (a seventh of the logs measurement's events)

It takes a few minutes (--quick: seconds); --only runs some of them. Run it on an otherwise idle
machine; the go test benchmarks in docs/performance.md measure the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if quick {
				events, seekEvents, jobsEvents = min(events, 50_000), min(seekEvents, 100_000), min(jobsEvents, 20_000)
			}
			return a.runBench(events, seekEvents, jobsEvents, quick, asJSON, only)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&quick, "quick", false, "small traces: a smoke test of the measurements, not the targets")
	fl.BoolVar(&asJSON, "json", false, "print the results as JSON")
	fl.IntVar(&events, "events", 200_000, "size of the paxos trace for the replay measurements")
	fl.IntVar(&seekEvents, "seek-events", 1_000_000, "size of the paxos trace for the seek measurement")
	fl.IntVar(&jobsEvents, "jobs-events", 200_000, "size of the chord trace for the --jobs measurement")
	fl.StringSliceVar(&only, "only", nil, "run only these measurements (comma-separated: simulate, replay, check, scaling, seek, nodes, logs, jobs, index)")
	return cmd
}

func (a *App) runBench(events, seekEvents, jobsEvents int, quick, asJSON bool, only []string) error {
	if events < 1000 || seekEvents < 1000 || jobsEvents < 1000 {
		return badInput("--events, --seek-events and --jobs-events must be at least 1000")
	}
	dir, err := os.MkdirTemp("", "replay-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "paxos.star")
	chordScript := filepath.Join(dir, "chord.star")
	for _, f := range []string{script, chordScript} {
		src, _ := scripts.FS.ReadFile(filepath.Base(f))
		if err := os.WriteFile(f, src, 0o644); err != nil {
			return err
		}
	}
	runs, ringSteps, chordNodes, chordEvents, raftEvents := 20, 20_000, 10_000, 200_000, 200_000
	if quick {
		runs, ringSteps, chordNodes, chordEvents, raftEvents = 3, 5_000, 1_000, 20_000, 20_000
	}
	prog := a.progress()
	var results []bench.Result
	steps := []benchStep{
		{"simulate", func() ([]bench.Result, error) { r, err := bench.Simulate(runs); return []bench.Result{r}, err }},
		{"replay", func() ([]bench.Result, error) {
			a, err := bench.ReplayVsDecode(events, false)
			if err != nil {
				return nil, err
			}
			b, err := bench.ReplayVsDecode(events, true)
			return []bench.Result{a, b}, err
		}},
		{"check", func() ([]bench.Result, error) {
			r, err := bench.CheckPaxos(script, runs/2)
			return []bench.Result{r}, err
		}},
		{"scaling", func() ([]bench.Result, error) { r, err := bench.RingScaling(ringSteps); return []bench.Result{r}, err }},
		{"seek", func() ([]bench.Result, error) { return bench.Seek(seekEvents, 100) }},
		{"nodes", func() ([]bench.Result, error) { return bench.ChordScale(chordScript, 10, chordNodes, chordEvents) }},
		{"logs", func() ([]bench.Result, error) {
			var rs []bench.Result
			for _, every := range []int{0, 1} {
				r, err := bench.LogGrowth(raftEvents, every)
				if err != nil {
					return nil, err
				}
				rs = append(rs, r)
			}
			return rs, nil
		}},
		{"jobs", func() ([]bench.Result, error) {
			return bench.CheckJobs(chordScript, jobsEvents)
		}},
		{"index", func() ([]bench.Result, error) {
			r, err := bench.IndexVsVerify(dir, events/2)
			if err != nil {
				return nil, err
			}
			g, err := bench.IndexGrowingLog(dir, raftEvents/7)
			return []bench.Result{r, g}, err
		}},
	}
	for _, o := range only {
		if !slices.ContainsFunc(steps, func(s benchStep) bool { return s.name == o }) {
			return badInput("--only %s: no such measurement (simulate, replay, check, scaling, seek, nodes, logs, jobs, index)", o)
		}
	}
	start := time.Now()
	for _, s := range steps {
		if len(only) > 0 && !slices.Contains(only, s.name) {
			continue
		}
		prog.on = a.Terminal
		prog.last = time.Time{}
		prog.update("bench: %s ...", s.name)
		rs, err := s.run()
		if err != nil {
			prog.done()
			return fmt.Errorf("bench %s: %w", s.name, err)
		}
		results = append(results, rs...)
	}
	prog.done()
	if asJSON {
		enc := json.NewEncoder(a.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(results)
	}
	for _, r := range results {
		verdict := ""
		if r.Met != nil {
			verdict = "target " + r.Target + ": met"
			if !*r.Met {
				verdict = "target " + r.Target + ": NOT MET"
			}
		}
		fmt.Fprintf(a.Stdout, "%-58s %12.3g %-9s %6.2fx vs %s  %s\n", r.Name, r.Value, r.Unit, r.Ratio, r.Baseline, verdict)
	}
	fmt.Fprintf(a.Stdout, "(%v; ratios compare measurements taken in this run)\n", time.Since(start).Round(time.Second))
	return nil
}

type benchStep struct {
	name string
	run  func() ([]bench.Result, error)
}
