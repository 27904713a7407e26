package cli

import (
	"os"
	"os/signal"
	"sync/atomic"
)

// onInterrupt notes Ctrl-C instead of dying of it, so a long verb can
// stop at a point where what it wrote is whole. The caller polls the flag
// and calls stop when done.
func onInterrupt() (interrupted *atomic.Bool, stop func()) {
	interrupted = new(atomic.Bool)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt)
	go func() {
		if _, ok := <-sigs; ok {
			interrupted.Store(true)
		}
	}()
	return interrupted, func() { signal.Stop(sigs); close(sigs) }
}
