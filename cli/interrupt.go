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
)

// graceful counts the verbs handling Ctrl-C and SIGTERM themselves at
// this moment (onInterrupt, interruptContext, the debugger). Signals are
// the process's, not a command's: this count is what the fallback of
// every running command (interruptFallback) consults.
var graceful atomic.Int32

// handling notes that a verb now handles the signals itself, until the
// returned function is called.
func handling() func() {
	graceful.Add(1)
	return sync.OnceFunc(func() { graceful.Add(-1) })
}

// interruptFallback makes Ctrl-C and SIGTERM, while no verb handles them
// itself (while a trace loads, say), end the command with one line and
// ExitInterrupted rather than a death by signal with nothing said (a
// hostile pass: export, report and verify died of SIGINT while
// loading). While a verb handles them, the first is the verb's; a second
// ends the command at once, as a second signal did before. stop
// releases the signals.
func interruptFallback(stderr io.Writer, verb string) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		seen := 0
		for sig := range sigs {
			if seen++; graceful.Load() > 0 && seen < 2 {
				continue
			}
			fmt.Fprintf(stderr, "replay %s: interrupted (%v) before it finished: its output was not written\n", verb, sig)
			os.Exit(ExitInterrupted)
		}
	}()
	return sync.OnceFunc(func() { signal.Stop(sigs); close(sigs) })
}

// onInterrupt notes Ctrl-C (and the other signals given, such as the
// SIGTERM a preempted Kubernetes pod gets) instead of dying of it, so a
// long verb can stop at a point where what it wrote is whole. The caller
// polls the flag and calls stop when done.
func onInterrupt(also ...os.Signal) (interrupted *atomic.Bool, stop func()) {
	interrupted = new(atomic.Bool)
	done := handling()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, append([]os.Signal{os.Interrupt}, also...)...)
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
	return interrupted, sync.OnceFunc(func() { signal.Stop(sigs); close(sigs); done() })
}

// interruptContext is a context done at Ctrl-C (and the other signals
// given), so that a long verb winds down where what it writes is whole;
// the second such signal ends the process, as without it, so that a verb
// stuck on the way can still be stopped. stop releases the signals.
func interruptContext(also ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	done := handling()
	ctx, stopCtx := signal.NotifyContext(context.Background(), append([]os.Signal{os.Interrupt}, also...)...)
	go func() {
		<-ctx.Done()
		stopCtx()
	}()
	return ctx, func() { stopCtx(); done() }
}
