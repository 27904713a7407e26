package explore

import (
	"io"
	"sync"

	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/stall"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/system"
	"github.com/replaycheck/replaycheck/world"
)

// ForkStarter rebuilds the world of tr at step at by replay (progress, if
// set, hears the steps) and returns a Starter that continues a copy of it
// per run, as replay fork continues one: explore --from, the critical
// transition's walks and predict all start their runs this way. A world
// whose handlers cannot be deep-copied (state.Copyable), or whose nodes
// have live tasks (a task's stack cannot be copied), is rebuilt for every
// run instead. The world returned is the one rebuilt, for reading
// only. A divergence before the step comes back as the replayer's
// *replay.Divergence; a node whose state is unknown there as a
// *replay.WorldError. watch, if set, watches the replays' handler calls
// (replay.Options.Watch).
func ForkStarter(tr *replay.Trace, reg *system.Registry, at int, progress func(int), watch *stall.Watch) (Starter, *world.World, error) {
	worldAt := func(progress func(int)) (*world.World, error) {
		r, err := replay.New(tr, reg, replay.Options{Watch: watch})
		if err != nil {
			return nil, err
		}
		return replay.WorldAt(r, at, progress)
	}
	base, err := worldAt(progress)
	if err != nil {
		return nil, nil, err
	}
	sys, err := reg.Lookup(base.System)
	if err != nil {
		return nil, nil, err
	}
	copyable := true
	for _, n := range base.Node {
		if n.State != nil && (n.State.LiveTasks() > 0 || !state.Copyable(n.State.Handler())) {
			copyable = false
		}
	}
	prefix := tr.Prefix(at + 1)
	var mu sync.Mutex
	return func(cfg sim.Config, out io.Writer) (*sim.Result, error) {
		if !copyable {
			w, err := worldAt(nil)
			if err != nil {
				return nil, err
			}
			return sim.RunFrom(sys, cfg, w, prefix, out)
		}
		mu.Lock()
		w := base.Copy(state.Copier)
		mu.Unlock()
		return sim.RunFrom(sys, cfg, w, prefix, out)
	}, base, nil
}
