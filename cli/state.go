package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/nearest"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/state"
	"github.com/replaycheck/replaycheck/statedb"
)

// stateSource serves observed states: the trace database when a current
// one exists (reads cost one checkpoint plus deltas), else a replay.
type stateSource interface {
	nodes() []node.ID
	steps() int
	// leaves is a node's state once step pos has executed, as the
	// debugger's State panel shows it (statedb.Leaves); unknown says why
	// it is not known.
	leaves(id node.ID, pos int) (ls []state.Leaf, unknown string, err error)
	// history lists every version of one field, in step order.
	history(id node.ID, path string) ([]statedb.Version, error)
	// unknown lists the stretches where a node's state is unknown.
	unknown(id node.ID) []replay.Unknown
	// crashed tells whether step is a crash of node id (what removed
	// every field of the node there).
	crashed(id node.ID, step int) bool
	// restartAfter is the node's restart that follows its crash at step
	// (a down node runs nothing else), if it restarted.
	restartAfter(id node.ID, crash int) (int, bool)
	// start is the run's time origin (Unix ns), which times count from.
	start() int64
	close()
}

type dbSource struct{ db *statedb.DB }

func (s dbSource) nodes() []node.ID { return s.db.Nodes() }
func (s dbSource) steps() int       { return s.db.Len() }
func (s dbSource) close()           { s.db.Close() }
func (s dbSource) start() int64     { return s.db.Meta().Start }
func (s dbSource) leaves(id node.ID, pos int) ([]state.Leaf, string, error) {
	ns, err := s.db.State(id, pos)
	if err != nil {
		return nil, "", err
	}
	return ns.Leaves, ns.Unknown, nil
}
func (s dbSource) unknown(id node.ID) []replay.Unknown { return s.db.Meta().Unknown[id] }
func (s dbSource) crashed(id node.ID, step int) bool   { return s.db.Crashed(id, step) }
func (s dbSource) restartAfter(id node.ID, crash int) (int, bool) {
	st, err := s.db.Step(crash)
	if err != nil || st.NextOnNode < 0 {
		return 0, false
	}
	next, err := s.db.Step(st.NextOnNode)
	return st.NextOnNode, err == nil && next.Kind == node.KindRestart
}
func (s dbSource) history(id node.ID, path string) ([]statedb.Version, error) {
	vs, err := s.db.History(id, path, s.db.Len()-1, math.MaxInt, 0)
	if err != nil {
		return nil, err
	}
	return s.db.Composites(id, path, vs)
}

type replaySource struct {
	a  *App
	tr *replay.Trace
}

func (s replaySource) nodes() []node.ID { return s.tr.Nodes }
func (s replaySource) steps() int       { return s.tr.Len() }
func (s replaySource) close()           {}
func (s replaySource) start() int64     { return s.tr.Header.Start }
func (s replaySource) crashed(id node.ID, step int) bool {
	ev := s.tr.Event(step)
	return ev.Node == id && ev.Kind == node.KindCrash
}
func (s replaySource) restartAfter(id node.ID, crash int) (int, bool) {
	steps := s.tr.NodeSteps(id)
	i, ok := slices.BinarySearch(steps, crash)
	if !ok || i+1 >= len(steps) {
		return 0, false
	}
	return steps[i+1], s.tr.Event(steps[i+1]).Kind == node.KindRestart
}
func (s replaySource) unknown(id node.ID) []replay.Unknown {
	return s.tr.Unknown[id]
}
func (s replaySource) replayer() (*replay.Replayer, error) {
	r, err := replay.New(s.tr, s.a.Registry, replay.Options{Watch: s.a.watch})
	if err != nil {
		return nil, badInput("%v", err)
	}
	return r, nil
}
func (s replaySource) leaves(id node.ID, pos int) ([]state.Leaf, string, error) {
	r, err := s.replayer()
	if err != nil {
		return nil, "", err
	}
	if err := r.RunTo(pos, nil); err != nil {
		return nil, "", err
	}
	if why, unknown := r.Unknown(id); unknown {
		return nil, why, nil
	}
	inst := r.Instance(id)
	if inst == nil {
		return nil, "", nil
	}
	if _, ran := s.tr.LastStepOf(id, pos); !ran {
		return nil, "", nil // the node has not run yet, as in the database
	}
	// A crashed node has no handler; it is down, as the database says,
	// not "not started".
	return statedb.Leaves(inst, s.tr.Header.Start), "", nil
}

// history replays the whole trace, reading the field after each of the
// node's steps: a version wherever its value changes, as the database
// keeps them.
func (s replaySource) history(id node.ID, path string) ([]statedb.Version, error) {
	r, err := s.replayer()
	if err != nil {
		return nil, err
	}
	var out []statedb.Version
	// have: the path is a leaf (last is its value) or, once it was one, a
	// container that filled up (filled), as the database's Composites
	// tells them: a filled container's own changes make no versions, its
	// stopping to exist does (its node going down, or the handler deleting
	// it), and so does its coming back filled (a restart rebuilt it, or
	// the handler set it again) once the path had a version (seen).
	have, filled, seen, last := false, false, false, ""
	err = r.RunTo(s.tr.Len()-1, func(step int) error {
		if s.tr.Event(step).Node != id {
			return nil
		}
		val, ok := "", false
		var leaves []state.Leaf
		if _, unknown := r.Unknown(id); !unknown {
			if inst := r.Instance(id); inst != nil {
				leaves = statedb.Leaves(inst, s.tr.Header.Start)
				for _, l := range leaves {
					if l.Path == path {
						val, ok = l.Value, true
						break
					}
				}
			}
		}
		desc, below := "", false
		if !ok && seen {
			desc, below = state.Composite(leaves, path)
		}
		switch {
		case ok && (!have || filled || val != last):
			out = append(out, statedb.Version{Step: step, Value: val})
		case below && !filled:
			out = append(out, statedb.Version{Step: step, Value: statedb.FilledValue(desc), Composite: true})
		case !ok && !below && have:
			out = append(out, statedb.Version{Step: step, Removed: true})
		}
		seen = seen || ok || below
		have, filled, last = ok || below, below, val
		return nil
	})
	return out, err
}

// currentDB opens the database of traces (at dir, or beside them) when
// one exists and is current, read-only and never building one (`replay
// index` does that). An out-of-date, damaged or foreign one is said so in
// a note and nil returned: the database is a cache of the replay, and the
// answer is one replay away.
func (a *App) currentDB(traces []string, dir string) *statedb.DB {
	if dir == "" {
		dir = statedb.PathFor(traces)
	}
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	db, err := statedb.Open(dir)
	if err != nil {
		fmt.Fprintf(a.Stderr, "note: %v; replaying instead\n", err)
		return nil
	}
	fp, ferr := statedb.Fingerprint(traces)
	if ferr == nil && db.Meta().Fingerprint == fp {
		return db
	}
	db.Close()
	fmt.Fprintf(a.Stderr, "note: %s is out of date (%s index rebuilds it); replaying instead\n", dir, a.prog())
	return nil
}

// openStates opens the database of traces when one exists and is current
// (read-only, never building one: `replay index` does that), else
// prepares a replay.
func (a *App) openStates(traces []string, dir string) (stateSource, error) {
	for _, t := range traces {
		if st, err := os.Stat(t); err != nil {
			return nil, badInput("%v", err)
		} else if st.IsDir() {
			return nil, badInput("%s is a directory, not a trace file", t)
		}
	}
	if db := a.currentDB(traces, dir); db != nil {
		a.warnUnknownFromDB(db)
		return dbSource{db}, nil
	}
	tr, err := a.loadTrace(traces)
	if err != nil {
		return nil, err
	}
	return replaySource{a: a, tr: tr}, nil
}

func (a *App) stateCmd() *cobra.Command {
	var (
		at     int
		nodeID string
		asJSON bool
		dbDir  string
	)
	cmd := &cobra.Command{
		Use:   "state TRACE... --at STEP [--node ID] [--json]",
		Short: "Print the observed state of every node (or one) once a step has executed",
		Long: `Print the observed state of the nodes once step STEP has executed, as the
debugger's State panel shows it: the pseudo-fields @status and @timers, then
every field of the node's state (state.Flatten paths, e.g. Agent.AcceptedValue),
in natural node order (n2 before n10).

Served from the trace database (replay index) when a current one exists,
else by replaying the trace up to STEP. An out-of-date or damaged database
is said so in one line on stderr, and the answer comes from the replay.

Exit codes: 0 printed, 2 bad input (unreadable trace, unknown node, step
out of range, a database found damaged in the middle of a read), 3 the
trace does not replay.`,
		Example: `  replay state paxos.lz4 --at 269
  replay state paxos.lz4 --at 269 --node n5 --json`,
		Args: requireArgs(1, "TRACE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("at") {
				return badInput("--at STEP is required")
			}
			src, err := a.openStates(args, dbDir)
			if err != nil {
				return err
			}
			defer src.close()
			if err := checkStep(src, at); err != nil {
				return err
			}
			ids := slices.Clone(src.nodes())
			if nodeID != "" {
				if err := checkNode(src, node.ID(nodeID)); err != nil {
					return err
				}
				ids = []node.ID{node.ID(nodeID)}
			}
			node.SortNatural(ids)
			type nodeJSON struct {
				Node    node.ID      `json:"node"`
				Unknown string       `json:"unknown,omitempty"`
				Fields  []state.Leaf `json:"fields"`
			}
			out := struct {
				Step  int        `json:"step"`
				Nodes []nodeJSON `json:"nodes"`
			}{Step: at}
			for _, id := range ids {
				ls, unknown, err := src.leaves(id, at)
				if err != nil {
					return err
				}
				out.Nodes = append(out.Nodes, nodeJSON{Node: id, Unknown: unknown, Fields: orEmpty(ls)})
			}
			if asJSON {
				enc := json.NewEncoder(a.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			fmt.Fprintf(a.Stdout, "state after #%d\n", at)
			for _, n := range out.Nodes {
				switch {
				case n.Unknown != "":
					fmt.Fprintf(a.Stdout, "%s: unknown (%s)\n", n.Node, n.Unknown)
				case len(n.Fields) == 0:
					fmt.Fprintf(a.Stdout, "%s: not started\n", n.Node)
				default:
					fmt.Fprintf(a.Stdout, "%s:\n", n.Node)
					for _, l := range n.Fields {
						fmt.Fprintf(a.Stdout, "  %s = %s\n", l.Path, shownValue(l.Value, src.start()))
					}
				}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&at, "at", 0, "the step after which to read the state (required)")
	fl.StringVar(&nodeID, "node", "", "only this node")
	fl.BoolVar(&asJSON, "json", false, "print JSON: {step, nodes: [{node, unknown, fields: [{Path, Value}]}]}")
	fl.StringVar(&dbDir, "db", "", "trace database directory (default: beside the first trace file)")
	return cmd
}

func (a *App) historyCmd() *cobra.Command {
	var (
		nodeID, field string
		asJSON        bool
		dbDir         string
	)
	cmd := &cobra.Command{
		Use:   "history TRACE... --node ID --field PATH [--json]",
		Short: "Print every version of one field of a node's state, with the step that wrote it",
		Long: `Print every version of one field of a node's observed state (a path as
'replay state' and the debugger's State panel show it, e.g.
Agent.AcceptedValue or @status), each with the step that wrote it; "(removed)"
where the field stopped existing (an entry was deleted; a filled
container too), "(removed: N crashed)" where its node crashed, and
"(N restarted; not restored)" where the restart after it did not rebuild
the field;
"[...]" (elements below it) or "{...}" (fields) where a nil or empty
slice, map or pointer filled up, or where it came back filled (a restart
rebuilt it, or the handler made it again; its own growth is no version);
and, between them, the stretches where the node's state is unknown (a
killed process, a file cut short or not given: "after #A unknown until
...").

Served from the trace database (replay index) when a current one exists,
else by replaying the whole trace. An out-of-date or damaged database is
said so in one line on stderr, and the answer comes from the replay.

Exit codes: 0 printed, 2 bad input (unreadable trace, unknown node or
field, a database found damaged in the middle of a read), 3 the trace does
not replay.`,
		Example: `  replay history paxos.lz4 --node n5 --field Agent.AcceptedValue
  replay history paxos.lz4 --node n5 --field @status --json`,
		Args: requireArgs(1, "TRACE (a trace file)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if nodeID == "" || field == "" {
				return badInput("--node ID and --field PATH are required")
			}
			src, err := a.openStates(args, dbDir)
			if err != nil {
				return err
			}
			defer src.close()
			id := node.ID(nodeID)
			if err := checkNode(src, id); err != nil {
				return err
			}
			vs, err := src.history(id, field)
			if err != nil {
				return err
			}
			if len(vs) == 0 {
				return unknownField(src, id, field)
			}
			// Where the node's state is unknown (killed, a file cut or
			// left behind) the field's value is too, whatever the last
			// version says.
			unknown := slices.Clone(src.unknown(id))
			slices.SortFunc(unknown, func(a, b replay.Unknown) int { return a.After - b.After })
			restored := restoredVersions(vs, unknown)
			vs = append(vs, restored...)
			slices.SortStableFunc(vs, func(a, b statedb.Version) int { return a.Step - b.Step })
			isRestored := map[int]bool{}
			for _, r := range restored {
				isRestored[r.Step] = true
			}
			if asJSON {
				type versionJSON struct {
					Step    int    `json:"step"`
					Value   string `json:"value"`
					Removed bool   `json:"removed,omitempty"`
					// Crash: removed because the node crashed there.
					Crash bool `json:"crash,omitempty"`
					// Composite: not a value but what lies below the path.
					Composite bool `json:"composite,omitempty"`
					// Restored: the value a restart rebuilt, equal to
					// the last before the node's state became unknown.
					Restored bool `json:"restored,omitempty"`
					// NotRestoredAt: of a crash, the restart after it
					// that did not rebuild the field.
					NotRestoredAt int `json:"not_restored_at,omitempty"`
				}
				type unknownJSON struct {
					After  int    `json:"after"`
					Until  int    `json:"until"`
					Reason string `json:"reason"`
				}
				out := struct {
					Node     node.ID       `json:"node"`
					Field    string        `json:"field"`
					Versions []versionJSON `json:"versions"`
					Unknown  []unknownJSON `json:"unknown,omitempty"`
				}{Node: id, Field: field}
				for i, v := range vs {
					crash := v.Removed && src.crashed(id, v.Step)
					vj := versionJSON{v.Step, v.Value, v.Removed, crash, v.Composite, isRestored[v.Step], 0}
					if r, ok := notRestored(src, vs, i, id); ok && crash {
						vj.NotRestoredAt = r
					}
					out.Versions = append(out.Versions, vj)
				}
				for _, u := range unknown {
					out.Unknown = append(out.Unknown, unknownJSON{u.After, u.Until, u.Reason})
				}
				enc := json.NewEncoder(a.Stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			next := 0 // the next unknown stretch to print
			printUnknown := func(before int) {
				for ; next < len(unknown) && unknown[next].After < before; next++ {
					after, until := stretch(unknown[next])
					fmt.Fprintf(a.Stdout, "%s unknown until %s: %s\n", after, until, unknown[next].Reason)
				}
			}
			for i, v := range vs {
				printUnknown(v.Step)
				switch {
				case v.Removed && src.crashed(id, v.Step):
					fmt.Fprintf(a.Stdout, "#%d (removed: %s crashed)\n", v.Step, id)
					// A restart that does not rebuild the field is no
					// version, but it is what a reader looks for (a new
					// user's 2PC participant forgot its vote there).
					if r, ok := notRestored(src, vs, i, id); ok {
						fmt.Fprintf(a.Stdout, "#%d (%s restarted; not restored)\n", r, id)
					}
				case v.Removed:
					fmt.Fprintf(a.Stdout, "#%d (removed)\n", v.Step)
				case isRestored[v.Step]:
					fmt.Fprintf(a.Stdout, "#%d %s (after its restart: as before the stretch)\n", v.Step, shownValue(v.Value, src.start()))
				default:
					fmt.Fprintf(a.Stdout, "#%d %s\n", v.Step, shownValue(v.Value, src.start()))
				}
			}
			printUnknown(math.MaxInt)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&nodeID, "node", "", "the node (required)")
	fl.StringVar(&field, "field", "", "the field's path, e.g. Agent.AcceptedValue (required)")
	fl.BoolVar(&asJSON, "json", false, "print JSON: {node, field, versions: [{step, value, removed, crash, composite, restored, not_restored_at}], unknown: [{after, until, reason}]}")
	fl.StringVar(&dbDir, "db", "", "trace database directory (default: beside the first trace file)")
	return cmd
}

// notRestored is the restart after the crash that removed vs[i], when
// that restart did not rebuild the field (its next version comes later,
// or none does).
func notRestored(src stateSource, vs []statedb.Version, i int, id node.ID) (int, bool) {
	r, ok := src.restartAfter(id, vs[i].Step)
	return r, ok && (i+1 == len(vs) || vs[i+1].Step > r)
}

// restoredVersions are the values restarts rebuilt that equal the last
// before the node's state became unknown: history lists changes, so
// after "unknown until its restart" such a value did not show, and the
// reader could not tell it from one the restart lost.
func restoredVersions(vs []statedb.Version, unknown []replay.Unknown) []statedb.Version {
	var out []statedb.Version
	for _, u := range unknown {
		if u.Until < 0 {
			continue
		}
		i, found := slices.BinarySearchFunc(vs, u.Until, func(v statedb.Version, step int) int { return v.Step - step })
		if found || i == 0 || vs[i-1].Removed || len(out) > 0 && out[len(out)-1].Step == u.Until {
			continue // the restart wrote a version of its own, none was before, or it is listed
		}
		out = append(out, statedb.Version{Step: u.Until, Value: vs[i-1].Value, Composite: vs[i-1].Composite})
	}
	return out
}

func orEmpty(ls []state.Leaf) []state.Leaf {
	if ls == nil {
		return []state.Leaf{}
	}
	return ls
}

func checkStep(src stateSource, at int) error {
	if n := src.steps(); at < 0 || at >= n {
		return badInput("--at %d: the trace has %d steps (#0..#%d)", at, n, n-1)
	}
	return nil
}

func checkNode(src stateSource, id node.ID) error {
	ids := src.nodes()
	if slices.Contains(ids, id) {
		return nil
	}
	names := make([]string, len(ids))
	for i, n := range ids {
		names[i] = string(n)
	}
	return badInput("--node %s: no such node (nearest: %s)", id, strings.Join(nearest.Names(names, string(id), 5), ", "))
}

// unknownField names the fields the node had that are closest to path:
// every one it ever had when a database serves, else those of its state
// at the end and in the middle of the run.
func unknownField(src stateSource, id node.ID, path string) error {
	seen := map[string]bool{}
	var names []string
	if d, ok := src.(dbSource); ok {
		// The database knows every field the node ever had.
		fields, err := d.db.Fields(id)
		if err != nil {
			return err
		}
		for _, f := range fields {
			seen[f] = true
			names = append(names, f)
		}
	}
	for _, pos := range []int{src.steps() - 1, src.steps() / 2} {
		ls, _, err := src.leaves(id, pos)
		if err != nil {
			return err
		}
		for _, l := range ls {
			if !seen[l.Path] {
				seen[l.Path] = true
				names = append(names, l.Path)
			}
		}
	}
	if len(names) == 0 {
		return badInput("--field %s: node %s has no observed state in the trace", path, id)
	}
	// A struct or container has no value of its own: its fields do
	// (a new user asked for a map entry whose value is a struct).
	var below []string
	for _, n := range names {
		if strings.HasPrefix(n, path+".") || strings.HasPrefix(n, path+"[") {
			below = append(below, n)
		}
	}
	if len(below) > 0 {
		return badInput("--field %s: on node %s it holds fields, not a value of its own: ask for one of them (%s)", path, id, listSome(below, 5, ""))
	}
	if hint := nearest.IndexHint(names, path); hint != "" {
		return badInput("--field %s: node %s has no such field: %s in the steps read", path, id, hint)
	}
	return badInput("--field %s: node %s has no such field (nearest: %s)", path, id, strings.Join(nearest.Names(names, path, 5), ", "))
}

// shownValue is a value as the text shows it (state.ShowValue: times
// since the run's start, as events show theirs), saying of the zero
// time what predicates read: None (a new user took it for a value).
func shownValue(v string, start int64) string {
	if v == state.ZeroTime {
		return "zero time (None to predicates)"
	}
	return state.ShowValue(v, start)
}
