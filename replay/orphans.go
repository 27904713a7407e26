package replay

import (
	"fmt"
	"slices"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// killedTail is how long after a killed process's last recorded event
// other nodes may still receive messages it sent in the events its
// recorder had not yet written (live.FlushInterval, 100 ms, and a block
// being compressed), allowing for messages in transit and for the clocks
// of different hosts. Receives later than that were sent by a process
// whose recording the files given do not hold: one restarted after the
// kill, whose segment is missing.
const killedTail = 5 * time.Second

// judgeOrphans judges the receives of messages sent as seqs past the last
// its sender's recording holds, once the recordings' ends are known
// (findTruncations). After a recording that ended cleanly (or holds no
// event of the node at all) they are a problem: the files given are not
// the run's whole recording of the sender. After a killed process's last
// event they are its unwritten tail, unless they go on for longer than
// such a tail can: then a later part of the recording is missing, and
// the node's recording counts as stopped before the run ended.
func (t *Trace) judgeOrphans(orphans map[node.ID]*orphanRecvs) []Problem {
	if len(orphans) == 0 {
		return nil
	}
	files := map[node.ID]*record.File{} // the last file that records each node
	for _, f := range t.Files {
		for _, h := range f.Segments {
			for _, id := range h.Recorded {
				files[id] = f
			}
		}
	}
	var problems []Problem
	for _, id := range slices.Sorted(mapKeys(orphans)) {
		o := orphans[id]
		f, recorded := files[id]
		if !recorded {
			continue // no file records the sender: a missing node, told as such
		}
		path := f.Path
		seqs := fmt.Sprintf("seq %d", o.minSeq)
		if o.maxSeq > o.minSeq {
			seqs = fmt.Sprintf("seqs %d..%d", o.minSeq, o.maxSeq)
		}
		recv := t.Event(o.firstStep)
		problem := func(held string) {
			problems = append(problems, Problem{t.File(o.firstStep), recv.Node, recv.Seq,
				fmt.Sprintf("receives a message %s sent as seq %d, but %s's recording (%s) %s: %d receive(s) of messages %s sent as %s in all; the files given are not this run's whole recording of %s (a process of it that did not record, or a file of another run)",
					id, recv.MsgSeq, id, path, held, o.n, id, seqs, id)})
		}
		steps := t.NodeSteps(id)
		ended := ""
		if len(f.Ends) > 0 {
			ended = fmt.Sprintf(" (%q)", f.Ends[len(f.Ends)-1].Reason)
		}
		if len(steps) == 0 {
			problem("holds no event of it, and ended" + ended)
			continue
		}
		last := steps[len(steps)-1]
		i := slices.IndexFunc(t.Unknown[id], func(u Unknown) bool { return u.Until < 0 && u.After >= 0 && u.After <= last })
		if i < 0 {
			problem(fmt.Sprintf("ends cleanly at seq %d (#%d)%s", t.Event(last).Seq, last, ended))
			continue
		}
		u := &t.Unknown[id][i]
		if !u.Killed {
			continue // a recording stopped or cut short: already a loss
		}
		d := time.Duration(t.Event(o.lastStep).Time - t.Event(u.After).Time)
		if d <= killedTail {
			continue // the killed process's unwritten tail
		}
		reason := fmt.Sprintf("%d message(s) it sent as %s were received until %v after its last recorded event, longer than a killed process's unwritten events stay in transit (%v): a later part of its recording (a restarted process's) is missing from the files given",
			o.n, seqs, d.Round(time.Millisecond), killedTail)
		u.Reason += "; " + reason
		u.Killed = false
		t.stops = append(t.stops, RecordingStop{Node: id, After: u.After, Path: path, Reason: reason})
	}
	return problems
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
