package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/shellword"

	"github.com/spf13/cobra"
	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/scripts"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// The demo's run: paxos with the latest-response bug at a seed where the
// bug breaks agreement (found by `replay sim paxos --bug latest-response
// --seeds 1-100 --check scripts/paxos.star`; see docs/case-studies.md).
const (
	demoBug  = "latest-response"
	demoSeed = 21
)

func (a *App) demoCmd() *cobra.Command {
	var output, dir string
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR] [-o FILE]",
		Short: "Find a seeded Paxos bug: simulate, check, and point at the violation",
		Long: fmt.Sprintf(`Simulate the bundled Paxos system (7 processes, 30%% message loss,
crash/restart churn) built with the %s bug at seed %d, check the run
against the embedded scripts/paxos.star, print the report and the command
that opens the debugger at the violation.

The bug: when a leader has promises from a majority, it must propose the
value of the highest-numbered round among them; the buggy leader takes the
value of the response it received last. Agreement breaks: two different
values get chosen. The check finds the exact step where the second value
is chosen by a majority.

The trace (replay-demo.lz4) and a copy of the script (replay-demo.star) go
to a fresh temporary directory, not the current one, so the demo can run
anywhere (after go install, too) and leaves no files in a checkout; the
demo prints where, and every command it prints works from the current
directory. --dir DIR writes them into DIR instead (created if missing);
-o FILE names the trace (the script goes beside it, as .star), inside DIR
with --dir, else relative to the current directory. A script there that
is not the demo's (one you edited) is not replaced: the demo exits 2.
Exits 0 when the demonstration worked.`, demoBug, demoSeed),
		Example: `  replay demo
  replay demo --dir demo     # then: replay debug demo/replay-demo.lz4 --preds demo/replay-demo.star`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runDemo(dir, output, cmd.Flags().Changed("dir"), cmd.Flags().Changed("output"))
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "directory for the demo's files (default: a fresh temporary directory)")
	cmd.Flags().StringVarP(&output, "output", "o", "replay-demo.lz4", "trace file to write (the script goes beside it, as .star)")
	return cmd
}

// demoPaths decides where the demo's trace goes and whether it made a
// temporary directory for it (removed again if the demo fails, since
// nothing in it would be of use).
func demoPaths(dir, output string, dirSet, outputSet bool) (trace, made string, err error) {
	switch {
	case dirSet && dir == "":
		return "", "", badInput("--dir: empty directory name (omit --dir for a temporary directory)")
	case outputSet && output == "":
		return "", "", badInput("-o: empty file name")
	case dirSet:
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", "", badInput("--dir: %v", err)
		}
	case outputSet:
		// An explicit -o alone is where the user asked for the trace.
		return output, "", nil
	default:
		if dir, err = os.MkdirTemp("", "replay-demo-"); err != nil {
			return "", "", fmt.Errorf("demo: temporary directory: %w", err)
		}
		made = dir
	}
	if filepath.IsAbs(output) {
		return output, made, nil
	}
	return filepath.Join(dir, output), made, nil
}

func (a *App) runDemo(dir, output string, dirSet, outputSet bool) (err error) {
	output, made, err := demoPaths(dir, output, dirSet, outputSet)
	if err != nil {
		return err
	}
	if made != "" {
		defer func() {
			if err != nil {
				os.RemoveAll(made)
			}
		}()
	}
	w := a.Stdout
	sys := paxos.System
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Bug = demoSeed, demoBug
	cfg = cfg.WithDefaults(sys)
	// Both outputs are created before anything is printed, so a bad -o
	// is one line on stderr.
	script := strings.TrimSuffix(output, filepath.Ext(output)) + ".star"
	if script == output {
		return badInput("-o %s: the demo writes its predicates beside the trace as %s; name the trace with .lz4", output, script)
	}
	src, err := scripts.FS.ReadFile("paxos.star")
	if err != nil {
		return err
	}
	// The demo's script is there to be edited (docs/debugger.md refines
	// it): a run of the demo again replaces only its own copy, as it
	// replaces only a trace, not the user's edits.
	if old, err := os.ReadFile(script); err == nil && !bytes.Equal(old, src) {
		return badInput("%s exists and is not the demo's script (your edits?): move it, or give --dir another directory", script)
	}
	out, err := createTrace(output)
	if err != nil {
		return err
	}
	defer out.Abort()
	sf, err := createAtomic(script)
	if err != nil {
		return err
	}
	defer sf.Abort()
	// Where the files are, said once; the commands below name them as
	// the user can type them from here.
	if made != "" {
		fmt.Fprintf(w, "The demo's files go to %s (a fresh temporary directory; --dir DIR to choose one).\n\n", made)
	} else {
		fmt.Fprintf(w, "The demo's files go to %s.\n\n", filepath.Dir(output))
	}
	qOut, qScript := shellword.Path(output), shellword.Path(script)
	fmt.Fprintf(w, "1. Simulating %d Paxos processes with the %q bug: seed %d, message loss %g, churn %g crashes/node/s, %v of virtual time.\n",
		cfg.Nodes, demoBug, cfg.Seed, cfg.Drop, cfg.Churn, cfg.Time)
	res, err := sim.Run(sys, cfg, out)
	if err != nil {
		return fmt.Errorf("demo simulation: %w", err)
	}
	if err := out.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(w, "   %d events recorded to %s (%s).\n", res.Steps, output, res.Reason)

	if _, err := sf.Write(src); err != nil {
		return err
	}
	if err := sf.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(w, "2. Replaying it in causal order and checking %s (GlobalConsistency, AcceptedRoundIncreasing) after every step.\n\n", script)
	f, err := record.ReadFile(output)
	if err != nil {
		return err
	}
	tr, err := replay.Merge([]*record.File{f})
	if err != nil {
		return err
	}
	r, err := replay.New(tr, system.NewRegistry(sys), replay.Options{Watch: a.watch})
	if err != nil {
		return err
	}
	c, err := predicates.LoadSource(script, src, r, predicates.Options{To: -1})
	if err != nil {
		return err
	}
	checkStart := time.Now()
	rep, err := c.Run(predicates.RunOptions{})
	if err != nil {
		return err
	}
	rep.WriteText(w, time.Since(checkStart))
	if err := rep.Err(); err != nil {
		rep.WriteErrors(a.Stderr)
		return &exitError{ExitPredicateError, fmt.Errorf("demo: %w", err)}
	}
	if len(rep.Violations) == 0 {
		return fmt.Errorf("demo: the check found no violation at seed %d; the bundled paxos or its script changed", demoSeed)
	}
	v := rep.Violations[0]
	chosen := "two different values"
	if d, ok := v.Aux.(*starlark.Dict); ok {
		if l, found, _ := d.Get(starlark.String("decisions")); found {
			if l, ok := l.(*starlark.List); ok && l.Len() >= 2 {
				chosen = fmt.Sprintf("%s, after %s had already been chosen", l.Index(l.Len()-1), l.Index(0))
			}
		}
	}
	// A team's own binary (cli.Main with its systems) runs the demo from
	// the embedded paxos but cannot replay its trace: the commands name
	// the bundled replay, which can (they named this binary, then said
	// they would not work in it; a new user).
	prog, foreign := a.prog(), false
	if _, err := a.Registry.Lookup(sys.Name); err != nil {
		prog, foreign = "go run github.com/replaycheck/replaycheck/cmd/replay", true
	}
	fmt.Fprintf(w, `
3. What happened: at step #%[2]d (%[3]v after the start) a majority of agents
   accepted %[4]s. Agreement is broken.
   Inspect the run around that step:

     %[1]s events %[5]s --from %[6]d --limit 30
     %[1]s debug %[5]s --preds %[7]s --at %[2]d

   (%[1]s check %[5]s %[7]s exits 1 on this trace.)
`, prog, v.Step, time.Duration(v.Time).Round(time.Millisecond), chosen, qOut, max(0, v.Step-20), qScript)
	if foreign {
		fmt.Fprintf(w, "\n   (%s does not register %s: these commands run the bundled replay,\n   from a module that requires replaycheck, as yours does.)\n", a.prog(), sys.Name)
	}
	return nil
}
