package cli

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
)

// onInterrupt notes Ctrl-C (and the other signals given, such as the
// SIGTERM a preempted Kubernetes pod gets) instead of dying of it, so a
// long verb can stop at a point where what it wrote is whole. The caller
// polls the flag and calls stop when done.
func onInterrupt(also ...os.Signal) (interrupted *atomic.Bool, stop func()) {
	interrupted = new(atomic.Bool)
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
	return interrupted, sync.OnceFunc(func() { signal.Stop(sigs); close(sigs) })
}

// interruptContext is a context done at Ctrl-C (and the other signals
// given), so that a long verb winds down where what it writes is whole;
// the second such signal ends the process, as without it, so that a verb
// stuck on the way can still be stopped. stop releases the signals.
func interruptContext(also ...os.Signal) (ctx context.Context, stop context.CancelFunc) {
	ctx, stop = signal.NotifyContext(context.Background(), append([]os.Signal{os.Interrupt}, also...)...)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}
