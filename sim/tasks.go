package sim

import (
	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/node"
)

// Tasks (node.Go) in the simulator: a task made runnable by an event is
// resumed by an event of its own at the same virtual time. Its queue
// item's window is that instant, so an exploring chooser sees every
// runnable task of every node as one of the enabled events and picks
// which resumes first; the seeded chooser resumes them in the order they
// were woken.

// queueTasks queues a resume for each task an event woke.
func (s *Sim) queueTasks(sn *simNode, woken []node.TaskID) {
	for _, id := range woken {
		ev, ok := sn.inst.TaskResume(id)
		if !ok {
			continue // woken and ended within the same event
		}
		s.push(&item{at: s.now, kind: itemTask, to: sn.id, incarnation: sn.incarnation, ev: ev})
	}
}

// endTasks ends the tasks still live when the run stops, so their
// goroutines do not outlive it.
func (s *Sim) endTasks() {
	for _, id := range s.ids {
		if sn := s.nodes[id]; sn != nil {
			sn.inst.Close()
		}
	}
}

// hashTasks folds a node's live tasks (what each waits for) into a world
// hash: two worlds whose handlers are equal but whose tasks stand at
// different points have different futures.
func hashTasks(h *xxhash.Digest, in *node.Instance) {
	for _, t := range in.Tasks() {
		h.WriteString(t.Name)
		h.WriteString(t.State)
		h.WriteString(t.On)
	}
}
