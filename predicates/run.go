package predicates

import (
	"errors"
	"io"
	"time"
)

// RunOptions control Run.
type RunOptions struct {
	// StopAtFirst ends the run at the first violation that counts, or at
	// the first evaluation error (the run is not fully checked then).
	StopAtFirst bool
	// Counts decides which violations StopAtFirst stops at (default:
	// safety violations and liveness alarms).
	Counts func(*Violation) bool
	// Progress is called every few thousand steps.
	Progress func(step, total int)
	// Stop, if set, is polled after every step; when it returns true the
	// run ends there, as at an early stop (open intervals unjudged).
	Stop func() bool
	// Quiet, if positive, says the run ended because nothing was left to
	// happen (no message in flight, no timer set): after the last step
	// the script is evaluated once more with the time advanced by Quiet,
	// as the world stands then. Only what reads the time can change, and
	// "the oldest pending request is younger than T" breaks there, as it
	// would have if the run had gone on.
	Quiet time.Duration
}

// Run replays the whole trace, observing every step, and returns the
// report. A replay divergence is returned as the error (with the report of
// what was checked before it). Evaluation failures are in the report
// (Report.Err): predicates that failed were disabled and the others went
// on.
func (c *Checker) Run(opts RunOptions) (*Report, error) {
	counts := opts.Counts
	if counts == nil {
		counts = (*Violation).Finding
	}
	total := c.r.Len()
	var scan stopScan
	for {
		if err := c.r.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				if opts.Quiet > 0 && c.step >= 0 && (c.opts.To < 0 || c.step < c.opts.To) {
					if err := c.quiesce(opts.Quiet); err != nil {
						return c.finish(false), err
					}
				}
				break
			}
			return c.finish(false), err
		}
		if err := c.Observe(); err != nil {
			return c.finish(false), err
		}
		if opts.Progress != nil && c.step%2048 == 0 {
			opts.Progress(c.step, total)
		}
		if opts.Stop != nil && opts.Stop() && c.step < total-1 {
			return c.finish(false), nil
		}
		if c.opts.To >= 0 && c.step >= c.opts.To {
			// Stopping before the trace's end leaves open intervals
			// unjudged: the run went on past --to.
			return c.finish(c.step >= total-1), nil
		}
		if opts.StopAtFirst {
			if len(c.report.Errors) > 0 {
				return c.finish(false), nil
			}
			if scan.counted(c.report.Violations, counts) {
				return c.finish(false), nil
			}
		}
	}
	return c.Finish(), nil
}

// quiesce evaluates the script again after the last step, with the time
// advanced by d and nothing else changed (RunOptions.Quiet).
func (c *Checker) quiesce(d time.Duration) error {
	if c.step < c.opts.From {
		return nil
	}
	c.dropAux(c.step)
	c.now += int64(d)
	c.changed(timeDep)
	return c.evaluateStep()
}
