package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/regular"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/sim"
)

// loadSchedule reads a schedule from a schedule file or from a simulated
// trace (which holds the schedule of its run).
func loadSchedule(path string) (*sim.Schedule, error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, badInput("--schedule: %v", err)
	}
	defer f.Close()
	isTrace := startsLikeATrace(f)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, badInput("--schedule %s: %v", path, err)
	}
	if isTrace {
		sc, err := sim.ScheduleOfFile(path)
		if err != nil {
			return nil, badInput("--schedule: %v", err)
		}
		return sc, nil
	}
	sc, err := sim.ParseSchedule(f, path)
	if err != nil {
		return nil, badInput("--schedule: %v", err)
	}
	return sc, nil
}

func (a *App) scheduleCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "schedule TRACE [-o FILE]",
		Short: "Print the schedule of a simulated run: every event in the order it ran",
		Long: `Print the schedule of a simulated trace: the settings that build its nodes,
then one line per event in the order the simulator ran it, with its virtual
time and the randomness its handler drew.

A schedule names a simulated run exactly, whichever chooser made it (a
seed or an exploration strategy): replay sim SYSTEM --schedule FILE re-runs
it event for event. A fork has none of its own (fork the parent again with
the same seed to re-run it). It is text, one event per line, so two runs diff line
by line. Editing one asks for another run, but every line must still be
possible: remove a delivery and the events it caused must go too. A line
whose event cannot happen stops the rerun with exit 3, naming the line and
what could run instead.

--schedule also accepts the trace itself.

Exit codes: 0 written; 2 bad input (not a simulated trace, unreadable);
a damaged trace's schedule holds the events before the damage, is written
with a DAMAGED comment, and exits 2.`,
		Example: `  replay schedule found.lz4 -o found.schedule
  replay sim paxos --schedule found.schedule -o again.lz4
  diff <(replay schedule a.lz4) <(replay schedule b.lz4)`,
		Args: oneTrace,
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := sim.ScheduleOfFile(args[0])
			if sc == nil {
				return badInput("%v", err)
			}
			// A damaged trace's schedule is what could be read before the
			// damage: written, marked so in itself, and the exit is still
			// 2 (the message said so and nothing was written).
			damaged := err
			if damaged != nil {
				sc.Note = fmt.Sprintf("DAMAGED TRACE %s: this schedule holds only the %d events before the damage", args[0], len(sc.Events))
			}
			if output == "" {
				if err := sc.Format(a.Stdout); err != nil {
					return err
				}
			} else {
				// As explore's schedules: a script named by mistake (-o
				// mine.star) was replaced, which export and report refuse.
				// A trace is said to be one.
				if err := notOverATrace(output, "the schedule"); err != nil {
					return err
				}
				if err := replacesOnlyASchedule(output); err != nil {
					return err
				}
				if err := writeAtomic(output, func(w *atomicFile) error { return sc.Format(w) }); err != nil {
					return err
				}
				fmt.Fprintf(a.Stdout, "wrote %s: %d events\n", output, len(sc.Events))
			}
			if damaged != nil {
				return badInput("%v (written, marked DAMAGED in its comments)", damaged)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the schedule to FILE (default: standard output)")
	return cmd
}

// shrunkScheduleHint explains a schedule that cannot run when it is a
// shrunk trace: replay shrink keeps runs whose scenario inputs or crashes
// it left out, which only the trace itself reproduces.
func shrunkScheduleHint(err error, path, prog string) string {
	var mm *sim.ScheduleMismatch
	if !errors.As(err, &mm) {
		return ""
	}
	tf, rerr := record.ReadFile(path)
	if rerr != nil || tf.Header.Run["shrunk_from"] == "" {
		return ""
	}
	return fmt.Sprintf("; %s is a shrunk trace: a shrunk run that leaves out inputs or crashes of the scenario cannot be re-run as a schedule (%[2]s shrink says so when it writes no .schedule file); the trace itself is the reproduction: %[2]s check or %[2]s debug it", path, prog)
}

// scheduleExit maps a rerun that left its schedule to exit 3, as a replay
// that leaves its recording.
func scheduleExit(err error) error {
	var mm *sim.ScheduleMismatch
	if errors.As(err, &mm) {
		return withCode(ExitDivergence, err)
	}
	return withCode(ExitViolations, err)
}

// oneTrace takes exactly one TRACE.
var oneTrace = exactlyOne("TRACE", "")
