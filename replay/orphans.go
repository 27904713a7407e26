package replay

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// killedTail bounds how long the receives of what a killed process sent
// in its last, unwritten events can be spread over: those events are at
// most its last 100 ms (live.FlushInterval, and a block being
// compressed), so their messages arrive within about that of each other,
// give or take their transit and the clocks of different receivers'
// hosts. Receives spread over longer were sent over longer than any
// unwritten tail: by a process whose recording the files given do not
// hold (one restarted after the kill, whose segment is missing).
const killedTail = 5 * time.Second

// judgeOrphans judges the receives of messages sent as seqs past the last
// its sender's recording holds, once the recordings' ends are known
// (findTruncations). After a recording that ended cleanly (or ended
// holding no event of the node) they are a problem: the files given are
// not the run's whole recording of the sender. After a killed process's
// end they are its unwritten tail, unless they are spread over longer
// than such a tail can be: then a later part of the recording is
// missing, and the node's recording counts as stopped before the run
// ended. After a recording that stopped (a full disk) or was cut short,
// they are part of that loss, already told.
func (t *Trace) judgeOrphans(orphans map[node.ID]*orphanRecvs) []Problem {
	if len(orphans) == 0 {
		return nil
	}
	files := map[node.ID]*record.File{} // a file that records each node
	for _, f := range t.Files {
		for _, h := range f.Segments {
			for _, id := range h.Recorded {
				if _, ok := files[id]; !ok {
					files[id] = f
				}
			}
		}
	}
	var problems []Problem
	for _, id := range slices.Sorted(maps.Keys(orphans)) {
		o := orphans[id]
		f, recorded := files[id]
		if !recorded {
			continue // no file records the sender: a missing node, told as such
		}
		steps := t.NodeSteps(id)
		last := -1
		if len(steps) > 0 {
			last = steps[len(steps)-1]
			f = t.Files[t.fileOf[last]] // the file its recording ends in
		}
		seqs := fmt.Sprintf("seq %d", o.minSeq)
		if o.maxSeq > o.minSeq {
			seqs = fmt.Sprintf("seqs %d..%d", o.minSeq, o.maxSeq)
		}
		// The stretch of unknown state the node's recording ends in, if
		// it ends in one (killed, stopped, cut short).
		i := slices.IndexFunc(t.Unknown[id], func(u Unknown) bool { return u.Until < 0 && u.After <= last })
		if i < 0 {
			recv := t.Event(o.firstStep)
			held := "holds no event of it"
			if last >= 0 {
				held = fmt.Sprintf("ends cleanly at seq %d (#%d)", t.Event(last).Seq, last)
			}
			if len(f.Ends) > 0 {
				held += fmt.Sprintf(", its end record saying %q", f.Ends[len(f.Ends)-1].Reason)
			}
			problems = append(problems, Problem{t.File(o.firstStep), recv.Node, recv.Seq,
				fmt.Sprintf("receives a message %s sent as seq %d, but %s's recording (%s) %s: %d receive(s) of messages %s sent as %s in all; the files given are not this run's whole recording of %s (a process of it that did not record, or a file of another run)",
					id, recv.MsgSeq, id, f.Path, held, o.n, id, seqs, id)})
			continue
		}
		u := &t.Unknown[id][i]
		if !u.Killed {
			continue // a recording stopped or cut short: already a loss
		}
		spread := time.Duration(o.last - o.first)
		if spread <= killedTail {
			continue // the killed process's unwritten tail
		}
		reason := fmt.Sprintf("%d message(s) it sent as %s after its last recorded event were received over %v, longer than a killed process's unwritten last events can be spread over (%v): a later part of its recording (a restarted process's) is missing from the files given",
			o.n, seqs, spread.Round(time.Millisecond), killedTail)
		u.Reason += "; " + reason
		u.Killed = false
		t.stops = append(t.stops, RecordingStop{Node: id, After: u.After, Path: f.Path, Reason: reason})
	}
	return problems
}
