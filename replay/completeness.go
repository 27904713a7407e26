package replay

import (
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
)

// What a trace lacks of its run, for the verbs that judge a run: a check
// of a trace that ends before the run did must not judge liveness at its
// end as the run's end, nor exit 0 as if it had seen everything.

// RecordingStop is a gap record in a file that lost events no other file
// has: a gap to the end (the recording of a node stopped early: a full
// disk; in a merged file, a cut file), or a gap in the middle (Lost: a
// recorder that fell behind), after which the node's state is unknown
// until it restarts.
type RecordingStop struct {
	Node   node.ID
	After  int // the node's last recorded step before the gap (-1: none)
	Path   string
	Reason string
	// Lost names the seqs a gap in the middle lost ("seqs 100..120"); ""
	// for a gap to the end.
	Lost string
}

// RecordingStops lists the nodes of replayed whose recording a gap record
// says stopped before the end of the run or lost events on the way.
func (t *Trace) RecordingStops(replayed []node.ID) []RecordingStop {
	// Found with the other truncations, by the same rule (a gap whose
	// first seq another file has is that file's to end); here only the
	// replayed nodes that some file records count.
	var out []RecordingStop
	want, missing := idSet(replayed), idSet(t.Missing())
	for _, st := range t.stops {
		if want[st.Node] && !missing[st.Node] {
			out = append(out, st)
		}
	}
	return out
}

func idSet(ids []node.ID) map[node.ID]bool {
	set := make(map[node.ID]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return set
}

// NoEndRecord says whether no trace file has an end record: every
// recording was killed or is still running.
func (t *Trace) NoEndRecord() bool {
	for _, f := range t.Files {
		if f.Ended {
			return false
		}
	}
	return true
}

// Unended says whether no trace file ended its recording: each was
// killed, is still running, or stopped recording early, so the trace's
// end is not known to be the run's (a file can be checked while its node
// records). All files count, whatever is replayed: it is about when the
// run ended.
func (t *Trace) Unended() bool {
	for _, f := range t.Files {
		if recordedToItsEnd(f) {
			return false
		}
	}
	return true
}

// recordedToItsEnd says whether f has an end record and records some node
// up to it. A gap to the end says that node's recording stopped early or,
// in a merged file, that its own file was cut short or missing; the other
// nodes of a merged file still saw the run end.
func recordedToItsEnd(f *record.File) bool {
	if !f.Ended {
		return false
	}
	open := map[node.ID]bool{}
	for _, g := range f.Gaps {
		if g.To == 0 {
			open[g.Node] = true
		}
	}
	for _, h := range f.Segments {
		for _, id := range h.Recorded {
			if !open[id] {
				return true
			}
		}
	}
	return false
}

// DamagedFiles names the trace files of the replayed nodes that could not
// be read to their end. The damage of a file of other nodes does not
// touch a partial replay (receivers record what they were sent).
func (t *Trace) DamagedFiles(replayed []node.ID) []*record.File {
	var out []*record.File
	want := idSet(replayed)
	for _, f := range t.Files {
		if f.Damage != nil && records(f, want) {
			out = append(out, f)
		}
	}
	return out
}

// records says whether f holds events of any of the nodes of want.
func records(f *record.File, want map[node.ID]bool) bool {
	for _, h := range f.Segments {
		for _, id := range h.Recorded {
			if want[id] {
				return true
			}
		}
	}
	return false
}

// MissingOf are the nodes of replayed that no trace file records.
func (t *Trace) MissingOf(replayed []node.ID) []node.ID {
	var out []node.ID
	want := idSet(replayed)
	for _, id := range t.Missing() {
		if want[id] {
			out = append(out, id)
		}
	}
	return out
}

// Lossy says whether the trace, replaying the nodes of replayed, lacks
// events of the run it recorded: a damaged file, a node no file records,
// or a recording that stopped early. (A trace without an end record
// lacks only the run's end, which Incomplete says too.)
func (t *Trace) Lossy(replayed []node.ID) bool {
	return len(t.DamagedFiles(replayed)) > 0 || len(t.MissingOf(replayed)) > 0 || len(t.RecordingStops(replayed)) > 0
}

// Incomplete says whether the trace, replaying the nodes of replayed,
// lacks part of the run: a damaged file, a node no file records, a
// recording that stopped early, or no end record. A check of it does not
// judge liveness at its end (predicates.Options.CutShort).
func (t *Trace) Incomplete(replayed []node.ID) bool {
	return t.Lossy(replayed) || t.Unended()
}
