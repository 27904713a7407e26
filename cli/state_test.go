package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/statedb"
	"github.com/replaycheck/replaycheck/system"
)

// replay state and replay history answer the same from the trace database
// and from a replay, in natural node order, and refuse bad input with one
// line naming the nearest valid names.
func TestStateAndHistory(t *testing.T) {
	run := inProcess()
	trace := demoTrace(t, run)
	stateArgs := []string{"state", trace, "--at", "273", "--json"}
	histArgs := []string{"history", trace, "--node", "n5", "--field", "Agent.AcceptedValue", "--json"}
	byReplay, e, code := run(stateArgs...)
	if code != 0 {
		t.Fatalf("state by replay: exit %d %s", code, e)
	}
	histReplay, e, code := run(histArgs...)
	if code != 0 {
		t.Fatalf("history by replay: exit %d %s", code, e)
	}
	if _, e, code := run("index", trace); code != 0 {
		t.Fatalf("index: %s", e)
	}
	byDB, _, _ := run(stateArgs...)
	histDB, _, _ := run(histArgs...)
	if byDB != byReplay {
		t.Fatalf("state differs between the database and replay:\n%s\nvs\n%s", byDB, byReplay)
	}
	if histDB != histReplay {
		t.Fatalf("history differs between the database and replay:\n%s\nvs\n%s", histDB, histReplay)
	}
	var st struct {
		Step  int
		Nodes []struct {
			Node   string
			Fields []struct{ Path, Value string }
		}
	}
	if err := json.Unmarshal([]byte(byDB), &st); err != nil || st.Step != 273 || len(st.Nodes) != 7 {
		t.Fatalf("state JSON: %v %+v", err, st)
	}
	if st.Nodes[0].Node != "n1" || st.Nodes[6].Node != "n7" || len(st.Nodes[4].Fields) < 3 || st.Nodes[4].Fields[0].Path != "@status" {
		t.Fatalf("state JSON nodes: %+v", st.Nodes)
	}
	// n2 crashed at #237 and restarts after #273: down, with its status,
	// from the replay as from the database (the replay once said "not
	// started").
	if n2 := st.Nodes[1]; len(n2.Fields) != 2 || n2.Fields[0].Value != "down" {
		t.Fatalf("state JSON of the crashed n2: %+v", n2)
	}
	// Keys are lower case, as everywhere else (encoding/json above would
	// match "Path" too).
	if !strings.Contains(byDB, `"path": "@status"`) || strings.Contains(byDB, `"Path"`) {
		t.Fatalf("state JSON keys:\n%.400s", byDB)
	}
	var h struct {
		Versions []struct {
			Step  int
			Value string
		}
	}
	if err := json.Unmarshal([]byte(histDB), &h); err != nil || len(h.Versions) < 2 {
		t.Fatalf("history JSON: %v %s", err, histDB)
	}
	for i := 1; i < len(h.Versions); i++ {
		if h.Versions[i].Step <= h.Versions[i-1].Step || h.Versions[i].Value == h.Versions[i-1].Value {
			t.Fatalf("versions not one per change in step order: %+v", h.Versions)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"state", trace, "--at", "99999"}, "--at 99999: the trace has"},
		{[]string{"state", trace, "--at", "3", "--node", "n8"}, "--node n8: no such node (nearest: n1"},
		{[]string{"history", trace, "--node", "n5", "--field", "Agent.AcceptedValu"}, "nearest: Agent.AcceptedValue"},
		{[]string{"history", trace, "--node", "n5"}, "--field PATH are required"},
	} {
		_, e, code := run(c.args...)
		if code != 2 || !strings.Contains(e, c.want) || strings.Count(strings.TrimSpace(e), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q, want one line with %q", c.args, code, e, c.want)
		}
	}
}

// inProcess returns a runner of the CLI in this process, with the bundled
// systems: each call returns its stdout, stderr and exit code.
func inProcess() func(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	return func(args ...string) (string, string, int) {
		out.Reset()
		errb.Reset()
		code := app.Run(args)
		return out.String(), errb.String(), code
	}
}

// A nil slice that fills up is no leaf any more, but it did not stop
// existing: replay history says what it holds, from a replay and from the
// database alike, where it said "(removed)".
func TestHistoryOfAFieldThatFillsUp(t *testing.T) {
	run := inProcess()
	trace := demoTrace(t, run)
	args := []string{"history", trace, "--node", "n1", "--field", "Leader.Lasts"}
	byReplay, e, code := run(args...)
	if code != 0 {
		t.Fatalf("history by replay: exit %d %s", code, e)
	}
	if _, e, code := run("index", trace); code != 0 {
		t.Fatalf("index: %s", e)
	}
	byDB, _, _ := run(args...)
	if byDB != byReplay {
		t.Fatalf("history differs between the database and replay:\n%s\nvs\n%s", byDB, byReplay)
	}
	lines := strings.Split(strings.TrimSpace(byDB), "\n")
	if len(lines) < 2 || lines[0] != "#0 nil" {
		t.Fatalf("history of Leader.Lasts:\n%s", byDB)
	}
	var step int
	var desc string
	if _, err := fmt.Sscanf(lines[1], "#%d %s", &step, &desc); err != nil || !strings.HasPrefix(lines[1], fmt.Sprintf("#%d [...]", step)) {
		t.Fatalf("the first change of a nil list, want it filled with one element:\n%s", byDB)
	}
	// The state at that step does hold the element.
	st, _, _ := run("state", trace, "--at", strconv.Itoa(step), "--node", "n1")
	if !strings.Contains(st, "Leader.Lasts[0].") {
		t.Fatalf("state at #%d holds no Leader.Lasts[0]:\n%s", step, st)
	}
	// n1 crashes at #421 while its list is filled: the field goes with
	// the node's state, as a leaf's does (a filled list hid the crash),
	// and the history says it was the crash (a new user read "(removed)"
	// as the handler deleting it).
	if !strings.Contains(byDB, "\n#421 (removed: n1 crashed)\n#496 nil\n") {
		t.Fatalf("the crash at #421 is not in the history:\n%s", byDB)
	}
	js, _, _ := run(append(args, "--json")...)
	if !strings.Contains(js, `"step": 421,`+"\n"+`      "value": "",`+"\n"+`      "removed": true,`+"\n"+`      "crash": true`) {
		t.Fatalf("history --json does not say the crash removed it:\n%s", js)
	}
	if !strings.Contains(js, `"value": "[...]",`+"\n"+`      "composite": true`) {
		t.Fatalf("history --json does not mark the filled list composite:\n%.600s", js)
	}
}

// A container its node's restart rebuilds (raftkv's KV map, replayed
// from the raft log on disk; chord's JoinVia list, set again by Init)
// comes back filled, with no leaf of its own path written: history
// ended at the crash ("(removed: 3 crashed)") and showed nothing after
// the restart, though the state and the histories of its elements held
// them (a new user's Log). It lists the container again at the restart,
// from a replay and from the database alike.
func TestHistoryOfAContainerARestartRebuilt(t *testing.T) {
	for _, c := range []struct {
		sim         []string
		node, field string
	}{
		{[]string{"raftkv", "--churn", "1", "--time", "2s"}, "3", "KV"},
		{[]string{"chord", "--churn", "2", "--time", "3s"}, "n1", "JoinVia"},
	} {
		t.Run(c.sim[0], func(t *testing.T) {
			run := inProcess()
			trace := filepath.Join(t.TempDir(), "t.lz4")
			if _, e, code := run(append(append([]string{"sim"}, c.sim...), "-o", trace)...); code != 0 {
				t.Fatalf("sim: %s", e)
			}
			// The restarts after which the container holds elements.
			evs, _, _ := run("events", trace, "--node", c.node, "--kind", "restart")
			var filled []int
			for _, line := range strings.Split(strings.TrimSpace(evs), "\n") {
				var step int
				if _, err := fmt.Sscanf(line, "#%d", &step); err != nil {
					t.Fatalf("events: %q: %v", line, err)
				}
				st, _, _ := run("state", trace, "--at", strconv.Itoa(step), "--node", c.node)
				if strings.Contains(st, "\n  "+c.field+"[") {
					filled = append(filled, step)
				}
			}
			if len(filled) == 0 {
				t.Fatalf("no restart of %s rebuilds %s:\n%s", c.node, c.field, evs)
			}
			args := []string{"history", trace, "--node", c.node, "--field", c.field}
			byReplay, jsReplay, byDB, jsDB := historyBothWays(t, run, trace, args)
			if byDB != byReplay || jsDB != jsReplay {
				t.Fatalf("history differs between the database and replay:\n%s\nvs\n%s", byDB, byReplay)
			}
			for _, step := range filled {
				// The crash before it removed the container with its node.
				want := regexp.MustCompile(fmt.Sprintf(`\(removed: %s crashed\)\n#%d \[\.\.\.\]\n`, regexp.QuoteMeta(c.node), step))
				if !want.MatchString(byDB) {
					t.Errorf("history of %s's %s does not list it filled again at its restart #%d:\n%s", c.node, c.field, step, byDB)
				}
				if !strings.Contains(jsDB, fmt.Sprintf(`"step": %d,`+"\n"+`      "value": "[...]",`+"\n"+`      "composite": true`, step)) {
					t.Errorf("history --json does not mark the restart #%d composite:\n%s", step, jsDB)
				}
			}
		})
	}
}

// Shelf keeps boxes of items in a map, and a lid that holds items too.
// Its inputs make a box (empty), fill it, take it away whole, bring it
// back full and take it away again, with the lid alike, while the node
// stays up. No bundled system deletes a container that had been nil or
// empty while its node is up.
type Shelf struct {
	Boxes map[string][]int
	Lid   *ShelfLid
}

// ShelfLid is what Shelf.Lid points to.
type ShelfLid struct{ Items []int }

type shelfOp struct{ Op string }

func (s *Shelf) Init(node.Env)                           { s.Boxes = map[string][]int{} }
func (s *Shelf) Receive(node.Env, node.ID, node.Message) {}
func (s *Shelf) Timer(node.Env, node.Timer)              {}
func (s *Shelf) Input(_ node.Env, m node.Message) {
	switch m.(shelfOp).Op {
	case "make":
		s.Boxes["a"], s.Lid = nil, &ShelfLid{}
	case "fill":
		s.Boxes["a"] = append(s.Boxes["a"], 1)
		s.Lid.Items = append(s.Lid.Items, 1)
	case "take":
		delete(s.Boxes, "a")
		s.Lid = nil
	case "bring":
		s.Boxes["a"], s.Lid = []int{7, 8}, &ShelfLid{Items: []int{7}}
	}
}

var shelf = &system.System{
	Name:  "shelf",
	Codec: node.NewCodec().MustRegister(shelfOp{}),
	New:   func(node.ID, system.Config) node.Handler { return &Shelf{} },
	Sim:   system.SimDefaults{Nodes: 1, Time: 10 * time.Millisecond},
	Scenario: func(ctl system.Controller) {
		for i, op := range []string{"make", "fill", "take", "bring", "take"} {
			ctl.At(time.Duration(i+1)*time.Millisecond, func() { ctl.Input("n1", shelfOp{op}) })
		}
	},
}

// A filled container the handler deletes while its node stays up (a map
// entry whose value is a slice, a slice in a struct whose pointer is set
// to nil) stops existing as a leaf does: the replay said "(removed)" and
// the database nothing, as it keeps versions of leaves only, so that the
// history read from the database showed the container filled to the end.
// Brought back full, it is listed filled again, from both alike (neither
// listed it: the path was gone from its "(removed)" on).
func TestHistoryOfAContainerDeletedWhileItsNodeIsUp(t *testing.T) {
	var out, errb bytes.Buffer
	app := &App{Registry: system.NewRegistry(shelf), Stdout: &out, Stderr: &errb}
	run := func(args ...string) (string, string, int) {
		out.Reset()
		errb.Reset()
		code := app.Run(args)
		return out.String(), errb.String(), code
	}
	trace := filepath.Join(t.TempDir(), "s.lz4")
	if _, e, code := run("sim", "shelf", "--drop", "0", "--churn", "0", "-o", trace); code != 0 {
		t.Fatalf("sim: %s", e)
	}
	// #1 make, #2 fill, #3 take, #4 bring, #5 take.
	want := "#1 nil\n#2 [...]\n#3 (removed)\n#4 [...]\n#5 (removed)\n"
	for _, field := range []string{`Boxes["a"]`, "Lid.Items"} {
		args := []string{"history", trace, "--node", "n1", "--field", field}
		byReplay, jsReplay, byDB, jsDB := historyBothWays(t, run, trace, args)
		if byDB != byReplay || jsDB != jsReplay {
			t.Errorf("history of %s differs between the database and replay:\n%s\nvs\n%s", field, byDB, byReplay)
		}
		if byDB != want {
			t.Errorf("history of %s from the database:\n%swant\n%s", field, byDB, want)
		}
		if byReplay != want {
			t.Errorf("history of %s from a replay:\n%swant\n%s", field, byReplay, want)
		}
		if !strings.Contains(jsDB, `"step": 3,`+"\n"+`      "value": "",`+"\n"+`      "removed": true`+"\n") {
			t.Errorf("history --json of %s does not say it was removed at #3 (and not by a crash):\n%s", field, jsDB)
		}
		if err := os.RemoveAll(trace + ".db"); err != nil {
			t.Fatal(err)
		}
	}
}

// demoTrace simulates the demo's run (paxos, latest-response, seed 21)
// into a temporary directory with run and returns the trace's path.
func demoTrace(t *testing.T, run func(args ...string) (string, string, int)) string {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "p.lz4")
	if _, e, code := run("sim", "paxos", "--seed", "21", "--bug", "latest-response", "-o", trace); code != 0 {
		t.Fatalf("sim: %s", e)
	}
	return trace
}

// A mistyped field names its nearest among every field the node ever had
// when a database serves: it named those of the node's state at the end
// and in the middle only, missing fields of the run's middle stretches.
func TestUnknownFieldSuggestsEarlierFields(t *testing.T) {
	run := inProcess()
	trace := demoTrace(t, run)
	if _, e, code := run("index", trace); code != 0 {
		t.Fatalf("index: %s", e)
	}
	db, err := statedb.Open(trace + ".db")
	if err != nil {
		t.Fatal(err)
	}
	n := db.Len()
	leaves := func(pos int) map[string]bool {
		ns, err := db.State("n1", pos)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, l := range ns.Leaves {
			m[l.Path] = true
		}
		return m
	}
	end, middle := leaves(n-1), leaves(n/2)
	var only string // a field of neither sampled state
	for pos := 0; pos < n && only == ""; pos += 7 {
		for p := range leaves(pos) {
			if !end[p] && !middle[p] && strings.Contains(p, "[") {
				only = p
				break
			}
		}
	}
	db.Close()
	if only == "" {
		t.Fatal("n1 has no field outside its end and middle states: the test shows nothing")
	}
	typo := only + "x"
	_, errs, code := run("history", trace, "--node", "n1", "--field", typo)
	if code != 2 || !strings.Contains(errs, "nearest: "+only) {
		t.Fatalf("history of %s: exit %d, %s", typo, code, errs)
	}
}

// historyBothWays runs a history command (args) from a replay and then,
// once trace is indexed, from the database: the text and the --json of
// each, for a test to compare.
func historyBothWays(t *testing.T, run func(...string) (string, string, int), trace string, args []string) (text, js, textDB, jsDB string) {
	t.Helper()
	text, e, code := run(args...)
	if code != 0 {
		t.Fatalf("%v by replay: exit %d %s", args, code, e)
	}
	js, _, _ = run(append(args, "--json")...)
	if _, e, code := run("index", trace); code != 0 {
		t.Fatalf("index: %s", e)
	}
	textDB, _, _ = run(args...)
	jsDB, _, _ = run(append(args, "--json")...)
	return text, js, textDB, jsDB
}

// A field its node's restart does not rebuild (paxos' Leader.Lasts,
// volatile; a new user's 2PC participant's transaction, whose vote it
// forgot) has no version at the restart: history went from "(removed:
// n5 crashed)" to its next value many steps later, and the restart a
// reader looks for did not show. It says so at the restart, from a
// replay and from the database alike.
func TestHistorySaysARestartDidNotRestore(t *testing.T) {
	run := inProcess()
	trace := filepath.Join(t.TempDir(), "t.lz4")
	if _, e, code := run("sim", "paxos", "--seed", "1", "-o", trace); code != 0 {
		t.Fatalf("sim: %s", e)
	}
	args := []string{"history", trace, "--node", "n5", "--field", "Leader.Lasts[0].From"}
	byReplay, jsReplay, byDB, jsDB := historyBothWays(t, run, trace, args)
	if byDB != byReplay || jsDB != jsReplay {
		t.Fatalf("history differs between the database and replay:\n%s\nvs\n%s", byDB, byReplay)
	}
	// n5 crashes at #148 and restarts at #217 (the seed's churn).
	if !strings.Contains(byDB, "#148 (removed: n5 crashed)\n#217 (n5 restarted; not restored)\n") {
		t.Errorf("history does not say the restart at #217 left the field out:\n%s", byDB)
	}
	if !strings.Contains(jsDB, `"crash": true,`+"\n"+`      "not_restored_at": 217`) {
		t.Errorf("history --json does not name the restart:\n%s", jsDB)
	}
	// A field the restart rebuilds says nothing of the kind.
	rebuilt, _, _ := run("history", trace, "--node", "n5", "--field", "Leader.Round")
	if strings.Contains(rebuilt, "not restored") || !strings.Contains(rebuilt, "#217 0\n") {
		t.Errorf("history of a field Init sets again:\n%s", rebuilt)
	}
}
