package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// graceful counts, per signal the fallback watches (Ctrl-C, SIGTERM),
// the verbs handling it themselves at this moment (onInterrupt,
// interruptContext, the debugger). Signals are the process's, not a
// command's: these counts are what the fallback (interruptFallback)
// consults.
var graceful = map[os.Signal]*atomic.Int32{os.Interrupt: new(atomic.Int32), syscall.SIGTERM: new(atomic.Int32)}

// handling notes that a verb now handles sigs itself, until the returned
// function is called with whether one came. A verb that got one keeps
// its counts: the process is ending on the verb's terms, and the
// fallback, which may read its copy of that signal after the verb is
// done with it, must not end it on its own.
func handling(sigs []os.Signal) (done func(got bool)) {
	for _, sig := range sigs {
		if c := graceful[sig]; c != nil {
			c.Add(1)
		}
	}
	var once sync.Once
	return func(got bool) {
		once.Do(func() {
			if got {
				return
			}
			for _, sig := range sigs {
				if c := graceful[sig]; c != nil {
					c.Add(-1)
				}
			}
		})
	}
}

// interruptFallback makes Ctrl-C and SIGTERM, while no verb handles them
// itself (while a trace loads, say), end the process with one line and
// ExitInterrupted rather than a death by signal with nothing said (a
// hostile pass: export, report and verify died of SIGINT while
// loading). While a verb handles a signal, the first of it is the verb's;
// a second ends the process at once, as a second signal did before. It
// is the process's owner's (Main), not App.Run's: a program that runs
// the CLI within itself keeps its own signal handling. stop releases the
// signals.
func interruptFallback(stderr io.Writer, program, verb string) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		seen := map[os.Signal]int{}
		last := map[os.Signal]time.Time{}
		for sig := range sigs {
			if graceful[sig].Load() > 0 && seen[sig] > 0 && time.Since(last[sig]) < repeatedSignal {
				// The same signal again at once is one sent twice
				// (GNU timeout signals the process, then its group),
				// not a second Ctrl-C to end the process.
				continue
			}
			last[sig] = time.Now()
			if seen[sig]++; graceful[sig].Load() > 0 && seen[sig] < 2 {
				continue
			}
			if verb != "" {
				verb += ": "
			}
			fmt.Fprintf(stderr, "%s %sinterrupted (%v) before it finished: its output was not written\n", program, verb, sig)
			os.Exit(ExitInterrupted)
		}
	}()
	return sync.OnceFunc(func() { signal.Stop(sigs); close(sigs) })
}

// repeatedSignal is how soon after a signal the same one counts as
// the same signal delivered twice rather than pressed twice.
const repeatedSignal = 250 * time.Millisecond

// onInterrupt notes Ctrl-C (and the other signals given, such as the
// SIGTERM a preempted Kubernetes pod gets) instead of dying of it, so a
// long verb can stop at a point where what it wrote is whole. The caller
// polls the flag and calls stop when done.
func onInterrupt(also ...os.Signal) (interrupted *atomic.Bool, stop func()) {
	interrupted = new(atomic.Bool)
	watched := append([]os.Signal{os.Interrupt}, also...)
	done := handling(watched)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, watched...)
	go func() {
		if _, ok := <-sigs; ok {
			interrupted.Store(true)
			// A second signal ends the process, as it would have
			// without this: a verb blocked where it cannot look at
			// the flag (opening a pipe no one reads) can still be
			// stopped.
			signal.Stop(sigs)
		}
	}()
	return interrupted, sync.OnceFunc(func() { signal.Stop(sigs); close(sigs); done(interrupted.Load()) })
}

// interruptContext is a context done at Ctrl-C (and the other signals
// given), so that a long verb winds down where what it writes is whole;
// the second such signal ends the process, as without it, so that a verb
// stuck on the way can still be stopped. stop releases the signals.
func interruptContext(also ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	watched := append([]os.Signal{os.Interrupt}, also...)
	done := handling(watched)
	ctx, stopCtx := signal.NotifyContext(context.Background(), watched...)
	go func() {
		<-ctx.Done()
		stopCtx()
	}()
	return ctx, func() { got := ctx.Err() != nil; stopCtx(); done(got) }
}
