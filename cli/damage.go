package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/statedb"
)

// damageFlag is --allow-damaged of the verbs whose exit code is a verdict
// on the whole run (check, verify): without it, a trace file that lost its
// tail makes them exit 2 after their report, so that a script never takes
// a check of part of a run for a check of all of it.
type damageFlag struct{ allow bool }

func (d *damageFlag) register(fl *pflag.FlagSet) {
	fl.BoolVar(&d.allow, "allow-damaged", false, "take what was recorded and recovered (a damaged file, a node's file missing, a recording that stopped early or has no end record) as the whole run: exit and judge as if nothing were lost (the warnings stay)")
}

// refuse is the exit of a verb that did its work on less than the run.
func (d *damageFlag) refuse(l loss, did string) error {
	return badInput("%s: only what was recorded and recovered was %s; --allow-damaged takes that as the whole run", l.what(), did)
}

// loss is what a check or replay lacks of the run: the damaged files it
// reached and the replayed nodes no file records, and the step after
// which data is missing (nodes absent throughout: -1).
type loss struct {
	files   []*record.File
	missing []node.ID
	stops   []replay.RecordingStop
	after   int
}

func (l loss) none() bool { return len(l.files) == 0 && len(l.missing) == 0 && len(l.stops) == 0 }

// what names the loss for the refusal.
func (l loss) what() string {
	var parts []string
	if len(l.files) > 0 {
		parts = append(parts, strings.Join(record.Paths(l.files), ", ")+" is damaged (warning above)")
	}
	if len(l.missing) > 0 {
		ids := make([]string, len(l.missing))
		for i, id := range l.missing {
			ids[i] = string(id)
		}
		// Clipped: a header may list 10,000 nodes of 256-byte names,
		// and the warning was one line of 5 MB.
		parts = append(parts, "no trace file records node "+listSome(ids, 8, ""))
	}
	for _, g := range groupStops(l.stops) {
		parts = append(parts, fmt.Sprintf("%s: the recording of %s %s (warning above)", g[0].Path, stopNodes(g), stopVerb(g[0], "stopped early")))
	}
	return strings.Join(parts, "; ")
}

// lossOf is the loss a run that went up to step last reached: a damaged
// file's loss begins after the earliest last recovered step of the nodes
// of its last segment (their state is unknown from there), or, where none
// is known, at the trace's end; a replayed node no file records is
// missing from the start.
func lossOf(tr *replay.Trace, replayed []node.ID, last int) loss {
	l := loss{after: tr.Len() - 1}
	damaged := map[*record.File]bool{}
	for _, f := range tr.DamagedFiles(replayed) {
		damaged[f] = true
	}
	for i, f := range tr.Files {
		if !damaged[f] {
			continue
		}
		from, ok := tr.LostAfter(i)
		if !ok {
			from = tr.Len() - 1
		}
		if last >= from {
			l.files = append(l.files, f)
			l.after = min(l.after, from)
		}
	}
	for _, st := range tr.RecordingStops(replayed) {
		if last >= st.After {
			l.stops = append(l.stops, st)
			l.after = min(l.after, st.After)
		}
	}
	if l.missing = tr.MissingOf(replayed); len(l.missing) > 0 {
		l.after = -1
	}
	return l
}

// damageLines is each damaged file's one-line report, for --json.
func damageLines(files []*record.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, fmt.Sprint(f.Damage))
	}
	return out
}

// stretch says where an unknown stretch of a node's state begins and
// ends, in words: ("after #A", "after its crash at #A" or "from the
// start", "its restart at #B" or "the end").
func stretch(u replay.Unknown) (after, until string) {
	after, until = fmt.Sprintf("after #%d", u.After), "the end"
	switch {
	case u.Down:
		after = fmt.Sprintf("after its crash at #%d", u.After) // down till then, not lost
	case u.After < 0:
		after = "from the start" // nothing of the node was recorded before
	}
	if u.Until >= 0 {
		until = fmt.Sprintf("its restart at #%d", u.Until)
	}
	return after, until
}

// unknownStretches describes, per node of ids, where its state is
// unknown and why: what verify and check list after their report.
func unknownStretches(tr *replay.Trace, ids []node.ID) map[node.ID][]string {
	out := map[node.ID][]string{}
	for _, id := range ids {
		for _, u := range tr.Unknown[id] {
			after, until := stretch(u)
			out[id] = append(out[id], fmt.Sprintf("state unknown %s until %s: %s", after, until, u.Reason))
		}
	}
	return out
}

// writeUnknown prints where each node's state is unknown, node by node in
// ids' order. Stretches that end alike for the same reason (one damaged
// file cuts every node's recording) are one entry naming the reason once,
// with where each node's stretch begins; --json lists each node. Each
// entry's first line begins with prefix.
func writeUnknown(w io.Writer, unknown map[node.ID][]replay.Unknown, ids []node.ID, prefix string) {
	type shared struct{ until, reason string }
	type start struct {
		id    node.ID
		after string
	}
	var order []shared
	starts := map[shared][]start{}
	for _, id := range ids {
		for _, u := range unknown[id] {
			after, until := stretch(u)
			k := shared{until, u.Reason}
			if _, ok := starts[k]; !ok {
				order = append(order, k)
			}
			starts[k] = append(starts[k], start{id, after})
		}
	}
	for _, k := range order {
		ss := starts[k]
		if len(ss) == 1 {
			fmt.Fprintf(w, "%s%s: state unknown %s until %s: %s\n", prefix, ss[0].id, ss[0].after, k.until, k.reason)
			continue
		}
		fmt.Fprintf(w, "%s%d nodes: state unknown until %s: %s\n", prefix, len(ss), k.until, k.reason)
		var each []string
		for _, s := range ss {
			each = append(each, fmt.Sprintf("%s %s", s.id, s.after))
		}
		fmt.Fprintf(w, "  %s\n", listSome(each, 16, " (--json lists each)"))
	}
}

// warnUnknownFromDB warns where the nodes' states are unknown, as read
// from a trace database used without loading its trace again: what the
// build found lost is in the database, and its readers are owed the
// warning a load gives.
func (a *App) warnUnknownFromDB(db *statedb.DB) {
	meta := db.Meta()
	writeUnknown(a.Stderr, meta.Unknown, meta.Nodes, "warning: ")
}

// warnMissing says which nodes no file records, before a verb's output.
func (a *App) warnMissing(tr *replay.Trace, missing []node.ID) {
	if len(missing) > 0 {
		listed := make([]string, len(tr.Nodes))
		for i, id := range tr.Nodes {
			listed[i] = string(id)
		}
		fmt.Fprintf(a.Stderr, "warning: %s (the traces' header lists %s): its state is unknown throughout\n", loss{missing: missing}.what(), listSome(listed, 8, ""))
	}
}

// groupStops groups recording stops by file, in order.
func groupStops(stops []replay.RecordingStop) [][]replay.RecordingStop {
	type key struct {
		path string
		mid  bool
	}
	var out [][]replay.RecordingStop
	at := map[key]int{}
	for _, st := range stops {
		k := key{st.Path, st.Lost != ""}
		i, ok := at[k]
		if !ok {
			i, at[k] = len(out), len(out)
			out = append(out, nil)
		}
		out[i] = append(out[i], st)
	}
	return out
}

// stopNodes names the nodes of a group of stops as nodeCount does: one
// node may lose events at several places.
func stopNodes(g []replay.RecordingStop) string {
	nodes := map[node.ID]bool{}
	for _, st := range g {
		nodes[st.Node] = true
	}
	return nodeCount(len(nodes), g[0].Node)
}

// nodeCount is "node ID" for one node, else "N nodes".
func nodeCount(n int, one node.ID) string {
	if n == 1 {
		return "node " + string(one)
	}
	return fmt.Sprintf("%d nodes", n)
}

// stopVerb says what a recording stop did: stopped (as stopped says),
// or lost the seqs of a gap in the middle.
func stopVerb(st replay.RecordingStop, stopped string) string {
	if st.Lost != "" {
		return "lost events on the way"
	}
	return stopped
}

// warnStops warns, one line per file (and kind), of the recordings that
// stopped before the run ended or lost events on the way.
func (a *App) warnStops(stops []replay.RecordingStop) {
	for _, g := range groupStops(stops) {
		var each []string
		for _, st := range g {
			if st.Lost != "" {
				each = append(each, fmt.Sprintf("%s %s after #%d", st.Node, st.Lost, st.After))
			} else {
				each = append(each, fmt.Sprintf("%s after #%d", st.Node, st.After))
			}
		}
		fmt.Fprintf(a.Stderr, "warning: %s: the recording of %s %s (%s): %s\n",
			g[0].Path, stopNodes(g), stopVerb(g[0], "stopped before the run ended"), listSome(each, 8, ""), g[0].Reason)
	}
}

// stopLines is each recording stop in one line, for --json.
func stopLines(stops []replay.RecordingStop) []string {
	var out []string
	for _, st := range stops {
		if st.Lost != "" {
			out = append(out, fmt.Sprintf("%s: the recording of node %s lost %s after #%d: %s", st.Path, st.Node, st.Lost, st.After, st.Reason))
		} else {
			out = append(out, fmt.Sprintf("%s: the recording of node %s stopped after #%d: %s", st.Path, st.Node, st.After, st.Reason))
		}
	}
	return out
}

// listSome joins the first limit items with commas and says how many more
// there are, then more.
func listSome(items []string, limit int, more string) string {
	if len(items) <= limit {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s, and %d more%s", strings.Join(items[:limit], ", "), len(items)-limit, more)
}
