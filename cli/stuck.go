package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/stall"
)

// A handler that loops when replayed, though the recorded call returned
// (code changed since the recording, or a nondeterministic handler), hung
// verify, check and index for good: Go cannot end the goroutine that
// runs it. The command runs on a goroutine of its own instead, while the
// caller's watches its replays (App.watch): after stall.WarnAfter it says
// which node and step on stderr; at Ctrl-C, or once --handler-bound
// passes, it gives the command up, leaving the stuck goroutine behind
// (Main's process ends at once).

// stuckCommand is a command given up on.
type stuckCommand struct {
	stall.Stuck
	bound  time.Duration
	code   int
	goexit bool // the command's goroutine ended with runtime.Goexit
}

func (s *stuckCommand) message() string {
	if s.goexit {
		if s.What == "" {
			return "runtime.Goexit was called outside a handler, ending the command's goroutine: it did not finish, and its output was not written, or is incomplete"
		}
		return fmt.Sprintf("replay diverged at step #%d: %s, called runtime.Goexit when replayed, where the recorded one returned, ending the command's goroutine: it did not finish, and its output was not written, or is incomplete", s.Step, s.What)
	}
	if s.Interrupted {
		return fmt.Sprintf("interrupted (step #%d: %s, had not returned after %v) before it finished: its output was not written, or is incomplete (events)", s.Step, s.What, s.After)
	}
	if s.Own {
		return predicates.StuckFailure(s.Stuck).String() + "; the command was given up on: its output was not written, or is incomplete"
	}
	return fmt.Sprintf("replay diverged at step #%d: %s, did not return within %v (--handler-bound), where the recorded one returned: an endless loop, or a call that blocks outside the runtime (a Go channel, sync.Mutex, time.Sleep, file or network I/O), in code changed since the recording or not deterministic; the command did not finish: its output was not written, or is incomplete (events)", s.Step, s.What, s.bound)
}

// executeWatched runs the command line on a goroutine of its own and
// returns as it does, or with stuck set when the watch gives up on one of
// its handler calls (or a handler ends that goroutine with Goexit).
func (a *App) executeWatched(root *cobra.Command, name string, bound *atomic.Int64) (*cobra.Command, error, *stuckCommand) {
	var cmd *cobra.Command
	var err error
	// Ctrl-C (or SIGTERM) ends a command whose handler call has run a
	// second (stall.StopAfter) then, or whenever one has once it came; a
	// command not stuck handles it itself (the command sees it too). A
	// SIGTERM before the warning (a preempted pod) ended nothing until
	// the bound, and then as a divergence.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	interrupted := false
	stop := func() bool {
		if !interrupted {
			select {
			case <-sigs:
				interrupted = true
			default:
			}
		}
		return interrupted
	}
	limit := func() time.Duration { return time.Duration(bound.Load()) }
	slow := func(st stall.Stuck) {
		say := "there is no --handler-bound: Ctrl-C ends the command"
		if b := limit(); b > 0 {
			say = fmt.Sprintf("the command is given up on after %v (--handler-bound), or now at Ctrl-C", b)
		}
		if a.Terminal {
			fmt.Fprint(a.Stderr, "\r\033[K") // the command's progress line: its step count lags
		}
		fmt.Fprintf(a.Stderr, "%s: step #%d: %s, has not returned for %v: an endless loop, or a call that blocks outside the runtime? The recorded one returned; %s\n",
			name, st.Step, st.What, st.After, say)
	}
	st, gaveUp, goexit := a.watch.Run(func() { cmd, err = execute(root) }, limit, stop, slow)
	switch {
	case goexit:
		// In a replayed handler, the watch still has its call.
		st, _ := a.watch.Running(time.Now())
		code := ExitDivergence
		if st.What == "" {
			code = ExitViolations
		}
		return nil, nil, &stuckCommand{Stuck: st, code: code, goexit: true}
	case gaveUp:
		code := ExitDivergence
		switch {
		case st.Interrupted:
			code = ExitInterrupted
		case st.Own && (st.Step < 0 || strings.HasSuffix(name, " events")):
			// The script's load, or events' --match: bad input, as when
			// either runs out of budget.
			code = ExitBadInput
		case st.Own: // a predicate's evaluation: the only slots with bounds of their own
			code = ExitPredicateError
		}
		return nil, nil, &stuckCommand{Stuck: st, bound: limit(), code: code}
	}
	return cmd, err, nil
}

// gate passes writes through until closed, then drops them: what a
// command given up on writes after it must not look like its output. (A
// write already under way when it closes goes through: waiting for it
// could block on a pipe no one reads.)
type gate struct{ closed atomic.Bool }

func (g *gate) wrap(w io.Writer) io.Writer { return &gated{g: g, w: w} }

func (g *gate) close() { g.closed.Store(true) }

type gated struct {
	g *gate
	w io.Writer
}

func (w *gated) Write(p []byte) (int, error) {
	if w.g.closed.Load() {
		return len(p), nil
	}
	return w.w.Write(p)
}
