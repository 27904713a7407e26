package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/bench"
	"github.com/replaycheck/replaycheck/scripts"
)

func (a *App) benchCmd() *cobra.Command {
	var quick, asJSON bool
	var events, seekEvents int
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
  index      replay index of a trace of half --events against replay verify
             of it (target <= 3x)

It takes about a minute (--quick: seconds). Run it on an otherwise idle
machine; the go test benchmarks in docs/performance.md measure the same.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if quick {
				events, seekEvents = min(events, 50_000), min(seekEvents, 100_000)
			}
			return a.runBench(events, seekEvents, quick, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&quick, "quick", false, "small traces: a smoke test of the measurements, not the targets")
	fl.BoolVar(&asJSON, "json", false, "print the results as JSON")
	fl.IntVar(&events, "events", 200_000, "size of the paxos trace for the replay measurements")
	fl.IntVar(&seekEvents, "seek-events", 1_000_000, "size of the paxos trace for the seek measurement")
	return cmd
}

func (a *App) runBench(events, seekEvents int, quick, asJSON bool) error {
	if events < 1000 || seekEvents < 1000 {
		return badInput("--events and --seek-events must be at least 1000")
	}
	dir, err := os.MkdirTemp("", "replay-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "paxos.star")
	src, _ := scripts.FS.ReadFile("paxos.star")
	if err := os.WriteFile(script, src, 0o644); err != nil {
		return err
	}
	runs, ringSteps := 20, 20_000
	if quick {
		runs, ringSteps = 3, 5_000
	}
	prog := a.progress()
	var results []bench.Result
	steps := []struct {
		name string
		run  func() ([]bench.Result, error)
	}{
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
		{"index", func() ([]bench.Result, error) {
			r, err := bench.IndexVsVerify(dir, events/2)
			return []bench.Result{r}, err
		}},
	}
	start := time.Now()
	for _, s := range steps {
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
