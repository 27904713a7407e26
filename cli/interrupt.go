package cli

import (
	"os"
	"os/signal"
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
		}
	}()
	return interrupted, func() { signal.Stop(sigs); close(sigs) }
}
