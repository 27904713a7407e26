package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/state"
)

// fileInfo is what `replay info` reports about one trace file.
type fileInfo struct {
	File   string `json:"file"`
	System string `json:"system"`
	Bug    string `json:"bug"`
	Driver string `json:"driver"`
	// Codecs are the message codecs of its segments, in order, each once.
	Codecs   []string          `json:"codecs"`
	Run      map[string]string `json:"run,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
	Nodes    []node.ID         `json:"nodes"`
	Recorded []node.ID         `json:"recorded"`
	Segments int               `json:"segments"`
	// SegmentList describes each writer session of the file (a restarted
	// recorder appends one); present when there are several.
	SegmentList  []segmentInfo  `json:"segment_list,omitempty"`
	Events       int            `json:"events"`
	ByKind       map[string]int `json:"events_by_kind"`
	ByNode       map[string]int `json:"events_by_node"`
	MessageTypes map[string]int `json:"messages_received_by_type"`
	StartNS      int64          `json:"start_unix_ns"`
	FirstNS      int64          `json:"first_event_ns"` // since start
	LastNS       int64          `json:"last_event_ns"`
	Bytes        int64          `json:"file_bytes"`
	RawBytes     int64          `json:"raw_bytes"`
	// DecodedBytes: of a damaged file, the bytes before the block that
	// failed (the ratios are of those); of others, the file's size.
	DecodedBytes  int64            `json:"decoded_bytes"`
	BytesPerEvent float64          `json:"bytes_per_event"`
	Compression   float64          `json:"compression_ratio"`
	StateHashes   bool             `json:"state_hashes"`
	HashSpacing   string           `json:"state_hash_spacing,omitempty"`
	Ended         bool             `json:"ended"`
	EndReason     string           `json:"end_reason,omitempty"`
	EndStats      map[string]int64 `json:"end_stats,omitempty"`
	Gaps          []record.Gap     `json:"gaps,omitempty"`
	Damage        string           `json:"damage,omitempty"`
	// Invalid says why no verb replays the file although it reads (a
	// node's events recorded twice: a file concatenated with a copy).
	Invalid string `json:"invalid,omitempty"`
}

// segmentInfo is one writer session of a file: which process wrote it,
// what it recorded, and whether it closed (a killed recorder leaves no end
// record, and replay takes its nodes' states as unknown from its last
// event to the next segment's restart).
type segmentInfo struct {
	Index     int                   `json:"index"`
	Run       map[string]string     `json:"run,omitempty"`
	StartNS   int64                 `json:"start_unix_ns"`
	Events    int                   `json:"events"`
	Seqs      map[node.ID][2]uint64 `json:"seqs,omitempty"` // per node: first and last seq
	Ended     bool                  `json:"ended"`
	EndReason string                `json:"end_reason,omitempty"`
	EndStats  map[string]int64      `json:"end_stats,omitempty"`
}

// segments lists f's segments (nil for a file of one).
func segments(f *record.File) []segmentInfo {
	if len(f.Segments) < 2 {
		return nil
	}
	spans := f.NodeSpans()
	out := make([]segmentInfo, len(f.Segments))
	ends := 0 // f.Ends holds the end records of the ended segments, in order
	for i, h := range f.Segments {
		s := segmentInfo{Index: i, Run: h.Run, StartNS: h.Start, Seqs: map[node.ID][2]uint64{}}
		if i < len(f.SegmentStart) {
			next := f.Count // the events read, kept or not
			if i+1 < len(f.SegmentStart) {
				next = f.SegmentStart[i+1]
			}
			s.Events = next - f.SegmentStart[i]
		}
		if i < len(spans) {
			for id, sp := range spans[i] {
				s.Seqs[id] = [2]uint64{sp.First, sp.Last}
			}
		}
		if i < len(f.SegmentEnded) && f.SegmentEnded[i] && ends < len(f.Ends) {
			s.Ended, s.EndReason, s.EndStats = true, f.Ends[ends].Reason, f.Ends[ends].Stats
			ends++
		}
		out[i] = s
	}
	return out
}

func (a *App) infoCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "info FILE...",
		Short: "Summarise trace files: nodes, events, time span, size, damage",
		Long: `Summarise each trace file: the system and how it was built, its nodes,
events by kind and by node, the time span, the size on disk, bytes per event
and compression ratio, and whether the file is complete. A truncated or
corrupted file is summarised up to the damage, and the damage is described
(byte offset, bytes lost, last complete event); such a file exits 0, since
it was read. A file that is not a trace at all exits 2, and so does one
that reads but that no verb replays (a node's events recorded twice: a
file concatenated with a copy), after its summary (text or --json, which says
why in "invalid").`,
		Example: `  replay info paxos.lz4
  replay info --json node1.lz4 node2.lz4 node3.lz4`,
		Args: requireArgs(1, "FILE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var infos []fileInfo
			for _, p := range args {
				// Scanned, not kept: info of a 3M-event file held every
				// event (1.7 GB) to count them.
				counts := newEventCounts()
				f, err := record.ScanFile(p, func(ev *node.Event) error { counts.add(ev); return nil })
				if err != nil {
					return badInput("%v", err)
				}
				infos = append(infos, summarise(f, counts))
			}
			if asJSON {
				enc := json.NewEncoder(a.Stdout)
				enc.SetIndent("", "  ")
				var err error
				if len(infos) == 1 {
					err = enc.Encode(infos[0])
				} else {
					err = enc.Encode(infos)
				}
				if err != nil {
					return err
				}
			} else {
				for i, in := range infos {
					if i > 0 {
						fmt.Fprintln(a.Stdout)
					}
					printInfo(a, in)
				}
			}
			// An invalid file exits 2 whichever way it was described.
			for _, in := range infos {
				if in.Invalid != "" {
					return badInput("%s: %s", in.File, in.Invalid)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (an object, or an array for several files)")
	return cmd
}

// eventCounts is what info counts of a file's events, one at a time.
type eventCounts struct {
	n                int
	byKind, byNode   map[string]int
	messageTypes     map[string]int
	earliest, latest int64 // event times (Unix ns)
}

func newEventCounts() *eventCounts {
	return &eventCounts{byKind: map[string]int{}, byNode: map[string]int{}, messageTypes: map[string]int{}}
}

func (c *eventCounts) add(ev *node.Event) {
	if c.n == 0 {
		c.earliest, c.latest = ev.Time, ev.Time
	}
	c.n++
	c.byKind[ev.Kind.String()]++
	c.byNode[string(ev.Node)]++
	if ev.Kind == node.KindRecv {
		c.messageTypes[ev.MsgType]++
	}
	c.earliest, c.latest = min(c.earliest, ev.Time), max(c.latest, ev.Time)
}

// summarise is info's summary of f, whose events counts counted.
func summarise(f *record.File, counts *eventCounts) fileInfo {
	h := f.Header
	in := fileInfo{
		File: f.Path, System: h.System, Bug: h.Bug, Driver: h.Driver, Codecs: segmentCodecs(f), Run: h.Run, Params: h.Params,
		Nodes: slices.Clone(h.Nodes), Segments: len(f.Segments), Events: counts.n,
		ByKind: counts.byKind, ByNode: counts.byNode, MessageTypes: counts.messageTypes,
		StartNS: h.Start, Bytes: f.Size, RawBytes: f.Raw, StateHashes: h.StateHashes, HashSpacing: state.HashSpacing{Every: h.HashEvery, Bytes: h.HashBytes}.Describe(), Ended: f.Ended, Gaps: f.Gaps,
	}
	rec := map[node.ID]bool{}
	for _, s := range f.Segments {
		for _, n := range s.Recorded {
			rec[n] = true
		}
	}
	for n := range rec {
		in.Recorded = append(in.Recorded, n)
	}
	// Shown in natural order (n2 before n10); the header keeps byte order.
	node.SortNatural(in.Nodes)
	node.SortNatural(in.Recorded)
	if counts.n > 0 {
		in.FirstNS, in.LastNS = counts.earliest-h.Start, max(0, counts.latest-h.Start)
	}
	// Of a damaged file, only the bytes before the block that failed
	// were decoded: the ratios are of those (a truncated trace read
	// "compression 1.0x", its undecoded tail counted as if stored raw).
	decoded := f.Size
	if f.Damage != nil && f.Damage.Offset > 0 && f.Damage.Offset < decoded {
		decoded = f.Damage.Offset
	}
	in.DecodedBytes = decoded
	if in.Events > 0 {
		in.BytesPerEvent = float64(decoded) / float64(in.Events)
	}
	in.Invalid = f.RepeatedSeqs()
	if decoded > 0 {
		in.Compression = float64(f.Raw) / float64(decoded)
	}
	// The file's end is its last segment's: an earlier segment's end
	// record is not it when the last one was killed.
	if len(f.Ends) > 0 && len(f.SegmentEnded) > 0 && f.SegmentEnded[len(f.SegmentEnded)-1] {
		end := f.Ends[len(f.Ends)-1]
		in.EndReason, in.EndStats = end.Reason, end.Stats
	}
	if f.Damage != nil {
		in.Damage = f.Damage.Error()
	}
	in.SegmentList = segments(f)
	return in
}

func printInfo(a *App, in fileInfo) {
	w := a.Stdout
	row := func(k, format string, args ...any) {
		fmt.Fprintf(w, "%-12s "+format+"\n", append([]any{k}, args...)...)
	}
	row("file", "%s", in.File)
	row("system", "%s (bug %s)", in.System, in.Bug)
	row("codec", "%s", strings.Join(in.Codecs, ", "))
	driver := in.Driver
	if len(in.Run) > 0 {
		driver += ": " + runLine(in.Run)
	}
	if in.Segments > 1 {
		driver += " (first segment; each segment's process is listed under segments)"
	}
	row("recorded by", "%s", driver)
	if len(in.Params) > 0 {
		// The system's own settings (--param): a run is not re-made
		// without them.
		row("params", "%s", printable(runLine(in.Params)))
	}
	ids := make([]string, len(in.Nodes))
	for i, n := range in.Nodes {
		ids[i] = string(n)
	}
	row("nodes", "%d: %s", len(in.Nodes), clipList(ids, " "))
	if len(in.Recorded) != len(in.Nodes) {
		rs := make([]string, len(in.Recorded))
		for i, n := range in.Recorded {
			rs[i] = string(n)
		}
		row("recorded", "%s", clipList(rs, " "))
	}
	var kinds []string
	for _, k := range node.Kinds() {
		if n := in.ByKind[k.String()]; n > 0 {
			kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
		}
	}
	row("events", "%d steps: %s", in.Events, strings.Join(kinds, ", "))
	var per []string
	for _, n := range in.Nodes {
		per = append(per, fmt.Sprintf("%s %d", n, in.ByNode[string(n)]))
	}
	row("per node", "%s", clipList(per, ", "))
	if len(in.MessageTypes) > 0 {
		types := slices.Sorted(maps.Keys(in.MessageTypes))
		var parts []string
		for _, t := range types {
			parts = append(parts, fmt.Sprintf("%s %d", t, in.MessageTypes[t]))
		}
		row("received", "%s", strings.Join(parts, ", "))
	}
	clock := "virtual"
	if wallClock(in.Driver, in.Run) {
		// To the nanosecond: each file's times count from its own
		// start, and a trace of several files from the earliest.
		clock = "wall-clock, since " + time.Unix(0, in.StartNS).UTC().Format(time.RFC3339Nano)
	}
	row("time span", "%v .. %v (%s)", time.Duration(in.FirstNS), time.Duration(in.LastNS), clock)
	if in.Damage != "" && in.DecodedBytes < in.Bytes {
		// The ratios are of what was decoded (see info's JSON).
		row("size", "%s on disk, of which %s decoded to %s raw: %.1f bytes/event, compression %.1fx",
			humanize.IBytes(uint64(in.Bytes)), humanize.IBytes(uint64(in.DecodedBytes)), humanize.IBytes(uint64(in.RawBytes)), in.BytesPerEvent, in.Compression)
	} else {
		row("size", "%s on disk, %s raw: %.1f bytes/event, compression %.1fx",
			humanize.IBytes(uint64(in.Bytes)), humanize.IBytes(uint64(in.RawBytes)), in.BytesPerEvent, in.Compression)
	}
	if in.StateHashes {
		row("state", "hash of each node's state %s", in.HashSpacing)
	} else {
		row("state", "no state hashes (replay finds divergence through effects only)")
	}
	if in.Segments > 1 {
		row("segments", "%d (the recorder was restarted), %d without an end record (killed: replay takes the state as unknown from its last event to the next restart)", in.Segments, in.unclosed())
		for _, s := range in.SegmentList {
			row("", "%s", describeSegment(s))
		}
	}
	last := ""
	if in.Segments > 1 {
		last = " (last segment)"
	}
	if in.EndReason != "" {
		row("ended", "%s%s", in.EndReason, last)
	}
	if len(in.EndStats) > 0 {
		row("run stats", "%s%s", joinStats(in.EndStats), last)
	}
	for i, g := range in.Gaps {
		if i == infoGapRows && len(in.Gaps) > infoGapRows+1 {
			row("gap", "and %d more gap records (--json lists them all)", len(in.Gaps)-i)
			break
		}
		if g.Killed {
			more := ""
			if g.To != 0 {
				// The seq jump a restart makes over its reservation.
				more = "; its restart resumed above the seqs the process had reserved, most of which it never used"
			}
			row("gap", "%s %s not recorded: its process was killed (a crash of the node, not a loss%s): %s", g.Node, g.Seqs(), more, g.Reason)
			continue
		}
		row("gap", "%s %s not recorded: %s", g.Node, g.Seqs(), g.Reason)
	}
	var open []record.Gap // gaps to the end: recording stopped early
	for _, g := range in.Gaps {
		if g.To == 0 && !g.Killed {
			open = append(open, g)
		}
	}
	switch {
	case in.Invalid != "":
		row("status", "INVALID: %s", in.Invalid)
	case in.Damage != "":
		row("status", "DAMAGED: %s", in.Damage)
	case !in.Ended:
		row("status", "incomplete: no end record (the recording process was killed or is still running, or its recording stopped on a write error: see its log); every flushed event is readable")
	case len(open) > 0:
		more := ""
		if len(open) > 1 {
			more = fmt.Sprintf("; and %d more nodes", len(open)-1)
		}
		g := open[0]
		row("status", "incomplete: %s (%s %s not recorded%s)", g.Reason, g.Node, g.Seqs(), more)
	default:
		// The last segment is closed here: the others are earlier ones.
		var killedEnds []string
		for _, g := range in.Gaps {
			if g.Killed && g.To == 0 {
				killedEnds = append(killedEnds, string(g.Node))
			}
		}
		if killed := in.unclosed(); killed > 0 {
			row("status", "complete, but %d earlier segment(s) were killed (see segments): the nodes' states are unknown from each one's last event to the next restart", killed)
		} else if len(killedEnds) > 0 {
			row("status", "complete, but the process of %s was killed before the run ended (see gap): its state is unknown from its last event on", strings.Join(killedEnds, ", "))
		} else if lost := lossyGaps(in.Gaps); lost > 0 {
			row("status", "complete, but its recorder lost events on the way (%d gap record(s), see gap)", lost)
		} else {
			row("status", "complete")
		}
	}
}

// lossyGaps counts the gaps in the middle of a recording that are no
// killed process's end: events its recorder could not keep.
func lossyGaps(gaps []record.Gap) int {
	n := 0
	for _, g := range gaps {
		if g.To != 0 && !g.Killed {
			n++
		}
	}
	return n
}

// infoGapRows is how many gap records info's text shows of a file: a
// recorder that kept falling behind writes thousands.
const infoGapRows = 20

// unclosed counts the segments without an end record.
func (in fileInfo) unclosed() int {
	n := 0
	for _, s := range in.SegmentList {
		if !s.Ended {
			n++
		}
	}
	return n
}

func joinStats(stats map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(stats)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, stats[k]))
	}
	return strings.Join(parts, " ")
}

// runLine is a header's Run as key=value pairs by key, a value with
// spaces in quotes (a live recording's build).
func runLine(run map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(run)) {
		v := run[k]
		if strings.ContainsAny(v, " \t\"") {
			v = strconv.Quote(v)
		}
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

// describeSegment is one line of info's segment list: "#1 pid=4242:
// 812 events, 3 seqs 6714..9022, no end record (killed)".
func describeSegment(s segmentInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d", s.Index)
	if pid := s.Run["pid"]; pid != "" {
		fmt.Fprintf(&b, " pid=%s", pid)
	}
	fmt.Fprintf(&b, ": %d events", s.Events)
	ids := slices.Collect(maps.Keys(s.Seqs))
	node.SortNatural(ids)
	var spans []string
	for _, id := range ids {
		sp := s.Seqs[id]
		spans = append(spans, fmt.Sprintf("%s seqs %d..%d", id, sp[0], sp[1]))
	}
	if len(spans) > 0 {
		fmt.Fprintf(&b, ", %s", clipList(spans, ", "))
	}
	switch {
	case !s.Ended:
		b.WriteString(", no end record (killed, or still recording)")
	case s.EndReason != "":
		fmt.Fprintf(&b, ", ended: %s", s.EndReason)
	default:
		b.WriteString(", ended")
	}
	return b.String()
}

// infoListMax is how many entries a list in info's text output shows: a
// system of 10,000 nodes would otherwise print lines of 100 KB. --json
// lists them all.
const infoListMax = 40

func clipList(items []string, sep string) string {
	if len(items) <= infoListMax {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s%s… and %d more (--json lists all)", strings.Join(items[:infoListMax], sep), sep, len(items)-infoListMax)
}

// segmentCodecs lists the message codecs of f's segments, each once: a
// file a newer binary appended to holds two.
func segmentCodecs(f *record.File) []string {
	var cs []string
	for _, seg := range f.Segments {
		if !slices.Contains(cs, seg.Codec) {
			cs = append(cs, seg.Codec)
		}
	}
	return cs
}
