package cli

import (
	"fmt"
	"math"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/replaycheck/replaycheck/predicates"
)

// scriptBudgetFlags are the limits on a predicates script, shared by every
// verb that checks one (check, sim --check) so they mean the same there.
type scriptBudgetFlags struct {
	maxSteps   uint64
	memory     string
	timeBudget time.Duration
}

func (b *scriptBudgetFlags) register(fl *pflag.FlagSet) {
	fl.Uint64Var(&b.maxSteps, "max-steps", predicates.DefaultMaxSteps, "Starlark execution steps allowed per evaluation")
	fl.StringVar(&b.memory, "script-memory", humanize.IBytes(predicates.DefaultMemoryBudget),
		"how much the script's load and each evaluation may grow the heap (e.g. 64MiB, 1GiB)")
	fl.DurationVar(&b.timeBudget, "script-time", predicates.DefaultTimeBudget, "how long the script's load and each evaluation may run")
}

// parse validates the flags and returns the step, memory and time budgets.
func (b *scriptBudgetFlags) parse() (maxSteps uint64, memory int64, t time.Duration, err error) {
	n, perr := humanize.ParseBytes(b.memory)
	if perr != nil || n == 0 || n > math.MaxInt64 {
		return 0, 0, 0, badInput("--script-memory %q: want a size such as 256MiB or 1GiB", b.memory)
	}
	if b.timeBudget <= 0 {
		return 0, 0, 0, badInput("--script-time %v: want a positive duration such as 10s", b.timeBudget)
	}
	if b.maxSteps == 0 {
		return 0, 0, 0, badInput("--max-steps 0: want at least 1 (the default is %d)", predicates.DefaultMaxSteps)
	}
	return b.maxSteps, int64(n), b.timeBudget, nil
}

// String shows the budgets as flags, for a reproduction command; empty
// when every budget is the default.
func (b *scriptBudgetFlags) String() string {
	s := ""
	if b.maxSteps != predicates.DefaultMaxSteps {
		s += fmt.Sprintf(" --max-steps %d", b.maxSteps)
	}
	if n, err := humanize.ParseBytes(b.memory); err == nil && n != predicates.DefaultMemoryBudget {
		s += " --script-memory " + b.memory
	}
	if b.timeBudget != predicates.DefaultTimeBudget {
		s += " --script-time " + b.timeBudget.String()
	}
	return s
}
