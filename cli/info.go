package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
	File          string            `json:"file"`
	System        string            `json:"system"`
	Bug           string            `json:"bug"`
	Driver        string            `json:"driver"`
	Run           map[string]string `json:"run,omitempty"`
	Params        map[string]string `json:"params,omitempty"`
	Nodes         []node.ID         `json:"nodes"`
	Recorded      []node.ID         `json:"recorded"`
	Segments      int               `json:"segments"`
	Events        int               `json:"events"`
	ByKind        map[string]int    `json:"events_by_kind"`
	ByNode        map[string]int    `json:"events_by_node"`
	MessageTypes  map[string]int    `json:"messages_received_by_type"`
	StartNS       int64             `json:"start_unix_ns"`
	FirstNS       int64             `json:"first_event_ns"` // since start
	LastNS        int64             `json:"last_event_ns"`
	Bytes         int64             `json:"file_bytes"`
	RawBytes      int64             `json:"raw_bytes"`
	BytesPerEvent float64           `json:"bytes_per_event"`
	Compression   float64           `json:"compression_ratio"`
	StateHashes   bool              `json:"state_hashes"`
	HashSpacing   string            `json:"state_hash_spacing,omitempty"`
	Ended         bool              `json:"ended"`
	EndReason     string            `json:"end_reason,omitempty"`
	EndStats      map[string]int64  `json:"end_stats,omitempty"`
	Gaps          []record.Gap      `json:"gaps,omitempty"`
	Damage        string            `json:"damage,omitempty"`
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
it was read. A file that is not a trace at all exits 2.`,
		Example: `  replay info paxos.lz4
  replay info --json node1.lz4 node2.lz4 node3.lz4`,
		Args: requireArgs(1, "FILE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var infos []fileInfo
			for _, p := range args {
				f, err := record.ReadFile(p)
				if err != nil {
					return badInput("%v", err)
				}
				infos = append(infos, summarise(f))
			}
			if asJSON {
				enc := json.NewEncoder(a.Stdout)
				enc.SetIndent("", "  ")
				if len(infos) == 1 {
					return enc.Encode(infos[0])
				}
				return enc.Encode(infos)
			}
			for i, in := range infos {
				if i > 0 {
					fmt.Fprintln(a.Stdout)
				}
				printInfo(a, in)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (an object, or an array for several files)")
	return cmd
}

func summarise(f *record.File) fileInfo {
	h := f.Header
	in := fileInfo{
		File: f.Path, System: h.System, Bug: h.Bug, Driver: h.Driver, Run: h.Run, Params: h.Params,
		Nodes: slices.Clone(h.Nodes), Segments: len(f.Segments), Events: len(f.Events),
		ByKind: map[string]int{}, ByNode: map[string]int{}, MessageTypes: map[string]int{},
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
	for i, ev := range f.Events {
		in.ByKind[ev.Kind.String()]++
		in.ByNode[string(ev.Node)]++
		if ev.Kind == node.KindRecv {
			in.MessageTypes[ev.MsgType]++
		}
		t := ev.Time - h.Start
		if i == 0 || t < in.FirstNS {
			in.FirstNS = t
		}
		if t > in.LastNS {
			in.LastNS = t
		}
	}
	if in.Events > 0 {
		in.BytesPerEvent = float64(f.Size) / float64(in.Events)
	}
	if f.Size > 0 {
		in.Compression = float64(f.Raw) / float64(f.Size)
	}
	if len(f.Ends) > 0 {
		end := f.Ends[len(f.Ends)-1]
		in.EndReason, in.EndStats = end.Reason, end.Stats
	}
	if f.Damage != nil {
		in.Damage = f.Damage.Error()
	}
	return in
}

func printInfo(a *App, in fileInfo) {
	w := a.Stdout
	row := func(k, format string, args ...any) {
		fmt.Fprintf(w, "%-12s "+format+"\n", append([]any{k}, args...)...)
	}
	row("file", "%s", in.File)
	row("system", "%s (bug %s)", in.System, in.Bug)
	driver := in.Driver
	if len(in.Run) > 0 {
		keys := slices.Sorted(maps.Keys(in.Run))
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+in.Run[k])
		}
		driver += ": " + strings.Join(parts, " ")
	}
	row("recorded by", "%s", driver)
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
	if in.Driver == "live" {
		clock = "wall-clock, since " + time.Unix(0, in.StartNS).UTC().Format(time.RFC3339)
	}
	row("time span", "%v .. %v (%s)", time.Duration(in.FirstNS), time.Duration(in.LastNS), clock)
	row("size", "%s on disk, %s raw: %.1f bytes/event, compression %.1fx",
		humanize.IBytes(uint64(in.Bytes)), humanize.IBytes(uint64(in.RawBytes)), in.BytesPerEvent, in.Compression)
	if in.StateHashes {
		row("state", "hash of each node's state %s", in.HashSpacing)
	} else {
		row("state", "no state hashes (replay finds divergence through effects only)")
	}
	if in.Segments > 1 {
		row("segments", "%d (the recorder was restarted)", in.Segments)
	}
	if in.EndReason != "" {
		row("ended", "%s", in.EndReason)
	}
	if len(in.EndStats) > 0 {
		keys := slices.Sorted(maps.Keys(in.EndStats))
		var parts []string
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s=%d", k, in.EndStats[k]))
		}
		row("run stats", "%s", strings.Join(parts, " "))
	}
	for _, g := range in.Gaps {
		row("gap", "%s %s not recorded: %s", g.Node, g.Seqs(), g.Reason)
	}
	var open []record.Gap // gaps to the end: recording stopped early
	for _, g := range in.Gaps {
		if g.To == 0 {
			open = append(open, g)
		}
	}
	switch {
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
		row("status", "complete")
	}
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
