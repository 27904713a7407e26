package export_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/export"
	"github.com/replaycheck/replaycheck/internal/printable"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

// The demo trace (Paxos, 7 nodes, lossy network, churn) has a violation
// of GlobalConsistency at step 269; every test exports a window of it.
var demoDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "export-test")
	if err != nil {
		panic(err)
	}
	demoDir = dir
	var out, errb bytes.Buffer
	app := &cli.App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	if code := app.Run([]string{"demo", "-o", filepath.Join(dir, "demo.lz4")}); code != 0 {
		fmt.Fprintf(os.Stderr, "demo: exit %d: %s\n", code, errb.String())
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const violationStep = 269

// run exports with the given flags and returns the file's content.
func run(t *testing.T, args ...string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	app := &cli.App{Registry: examples.Registry(), Stdout: &stdout, Stderr: &stderr}
	argv := append([]string{"export", filepath.Join(demoDir, "demo.lz4"), "-o", out}, args...)
	if code := app.Run(argv); code != 0 {
		t.Fatalf("replay %s: exit %d: %s", strings.Join(argv, " "), code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func demoTrace(t *testing.T) *replay.Trace {
	t.Helper()
	tr, err := replay.Load(filepath.Join(demoDir, "demo.lz4"))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func preds() string { return filepath.Join(demoDir, "demo.star") }

// TestExportShiVizClocksMatchHappensBefore parses the ShiViz file with its
// own regex (Go's regexp reads the (?<name>) groups as JavaScript does)
// and checks what ShiViz checks — each host's own entry counts 1, 2, 3...
// and every entry names an event the log has — and that the clocks order
// two events exactly when happens-before does, computed independently
// from the trace (program order and send→receive, transitively).
func TestExportShiVizClocksMatchHappensBefore(t *testing.T) {
	for _, tc := range []struct{ from, to, nodes string }{
		{"0", "400", ""},
		{"200", "300", "n3,n5,n7"},
	} {
		args := []string{"--format", "shiviz", "--from", tc.from, "--to", tc.to, "--preds", preds()}
		if tc.nodes != "" {
			args = append(args, "--nodes", tc.nodes)
		}
		lines := strings.Split(strings.TrimSuffix(string(run(t, args...)), "\n"), "\n")
		if lines[0] != export.ShiVizRegex || lines[1] != "" {
			t.Fatalf("header: %q %q, want the regex and an empty delimiter", lines[0], lines[1])
		}
		re := regexp.MustCompile("^" + export.ShiVizRegex + "$")
		tr := demoTrace(t)
		type logged struct {
			host  string
			clock map[string]uint64
			step  int
		}
		var evs []logged
		count := map[string]uint64{}
		for _, l := range lines[2:] {
			m := re.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("line does not match the ShiViz regex: %q", l)
			}
			var e logged
			e.host = m[re.SubexpIndex("host")]
			fmt.Sscan(m[re.SubexpIndex("step")], &e.step)
			if err := json.Unmarshal([]byte(m[re.SubexpIndex("clock")]), &e.clock); err != nil {
				t.Fatalf("clock of %q: %v", l, err)
			}
			count[e.host]++
			if e.clock[e.host] != count[e.host] {
				t.Fatalf("%q: own entry %d, want %d (ShiViz wants 1, 2, 3...)", l, e.clock[e.host], count[e.host])
			}
			for h, c := range e.clock {
				if c > count[h] {
					t.Fatalf("%q: entry %s:%d names an event the log does not have yet (%d)", l, h, c, count[h])
				}
			}
			if string(tr.Event(e.step).Node) != e.host {
				t.Fatalf("%q: step %d is on %s", l, e.step, tr.Event(e.step).Node)
			}
			evs = append(evs, e)
		}
		if len(evs) < 40 {
			t.Fatalf("only %d events exported", len(evs))
		}
		if !strings.Contains(strings.Join(lines, "\n"), "GlobalConsistency violated at step #269") {
			t.Errorf("the violation is not in the log")
		}
		// happens-before over the exported events.
		pos := map[int]int{}
		for i, e := range evs {
			pos[e.step] = i
		}
		hb := make([][]bool, len(evs))
		for j, e := range evs {
			hb[j] = make([]bool, len(evs))
			for i := range j {
				if evs[i].host == e.host {
					hb[j][i] = true
				}
			}
			if s, ok := tr.SendStep(tr.Event(e.step)); ok {
				if i, ok := pos[s]; ok {
					hb[j][i] = true
				}
			}
			for i := j - 1; i >= 0; i-- {
				if hb[j][i] {
					for k := range i {
						hb[j][k] = hb[j][k] || hb[i][k]
					}
				}
			}
		}
		below := func(a, b map[string]uint64) bool {
			for h, c := range a {
				if c > b[h] {
					return false
				}
			}
			return true
		}
		for j := range evs {
			for i := range j {
				before := below(evs[i].clock, evs[j].clock)
				after := below(evs[j].clock, evs[i].clock)
				if before != hb[j][i] || after {
					t.Fatalf("#%d and #%d: clock says before=%v after=%v, happens-before says %v (%v, %v)",
						evs[i].step, evs[j].step, before, after, hb[j][i], evs[i].clock, evs[j].clock)
				}
			}
		}
	}
}

// TestExportPerfettoStructure checks the trace event JSON as Perfetto reads
// it: every record has ph, pid, tid; slices have ts and a positive dur and
// never overlap on a track; flow ids pair one s with one f, from the
// track of the sender to the track of the receiver; the violation is an
// instant event on its node's track.
func TestExportPerfettoStructure(t *testing.T) {
	b := run(t, "--format", "perfetto", "--from", "200", "--to", "300", "--preds", preds())
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	tr := demoTrace(t)
	names := map[float64]string{}
	type flow struct{ s, f map[string]any }
	flows := map[float64]*flow{}
	lastEnd := map[float64]float64{}
	slices, instants := 0, 0
	for _, e := range doc.TraceEvents {
		for _, k := range []string{"ph", "pid", "tid"} {
			if _, ok := e[k]; !ok {
				t.Fatalf("record without %s: %v", k, e)
			}
		}
		pid := e["pid"].(float64)
		if e["tid"].(float64) != pid {
			t.Fatalf("tid differs from pid: %v", e)
		}
		ph := e["ph"].(string)
		if ph != "M" {
			if _, ok := e["ts"].(float64); !ok {
				t.Fatalf("record without a numeric ts: %v", e)
			}
		}
		switch ph {
		case "M":
			names[pid] = e["args"].(map[string]any)["name"].(string)
		case "X":
			slices++
			ts, dur := e["ts"].(float64), e["dur"].(float64)
			if dur <= 0 || e["name"] == "" {
				t.Fatalf("bad slice: %v", e)
			}
			if ts < lastEnd[pid] {
				t.Fatalf("slice overlaps the one before on its track: %v", e)
			}
			lastEnd[pid] = ts + dur
			step := int(e["args"].(map[string]any)["step"].(float64))
			if string(tr.Event(step).Node) != names[pid] {
				t.Fatalf("step %d on track %s, its node is %s", step, names[pid], tr.Event(step).Node)
			}
		case "s", "f":
			id := e["id"].(float64)
			if flows[id] == nil {
				flows[id] = &flow{}
			}
			fl := flows[id]
			if ph == "s" {
				if fl.s != nil {
					t.Fatalf("flow %v starts twice", id)
				}
				fl.s = e
			} else {
				if fl.f != nil {
					t.Fatalf("flow %v ends twice", id)
				}
				if e["bp"] != "e" {
					t.Fatalf("flow end without bp e: %v", e)
				}
				fl.f = e
			}
		case "i":
			instants++
			if names[pid] != "n7" || !strings.Contains(e["name"].(string), "GlobalConsistency") {
				t.Fatalf("violation instant on %s: %v", names[pid], e)
			}
		default:
			t.Fatalf("unexpected ph %q", ph)
		}
	}
	want := 0
	for s := 200; s <= 300; s++ {
		if send, ok := tr.SendStep(tr.Event(s)); ok && send >= 200 {
			want++
		}
	}
	if len(flows) != want || want == 0 {
		t.Fatalf("%d flows, want one per message received in the window: %d", len(flows), want)
	}
	for id, fl := range flows {
		if fl.s == nil || fl.f == nil {
			t.Fatalf("flow %v is not paired: %v %v", id, fl.s, fl.f)
		}
		if fl.s["ts"].(float64) > fl.f["ts"].(float64) {
			t.Fatalf("flow %v ends before it starts", id)
		}
	}
	if slices != 101 || instants != 1 {
		t.Fatalf("%d slices and %d instants, want 101 and 1", slices, instants)
	}
}

// TestExportDOTRendersWithGraphviz runs Debian's dot over the export. CI
// installs graphviz and sets CI=1: there a missing dot fails the test.
func TestExportDOTRendersWithGraphviz(t *testing.T) {
	dot, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI=%s but dot is not installed (apt-get install graphviz): %v", os.Getenv("CI"), err)
		}
		t.Skip("dot (graphviz) is not installed; CI installs it")
	}
	b := run(t, "--format", "dot", "--from", "250", "--to", "280", "--preds", preds())
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = bytes.NewReader(b)
	var svg, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &svg, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("dot -Tsvg: %v: %s", err, stderr.String())
	}
	s := svg.String()
	// dot writes each node and edge as a <g class="node"> / <g class="edge">.
	tr := demoTrace(t)
	inWindow := 0
	for s := 250; s <= 280; s++ {
		for i := range tr.Event(s).Sends {
			for _, r := range tr.Receipts(tr.Event(s).SentMsg(i)) {
				if r <= 280 {
					inWindow++
				}
			}
		}
	}
	if got := strings.Count(s, ">paxos."); got < inWindow {
		t.Errorf("%d message labels in the SVG, want at least the %d messages received in the window", got, inWindow)
	}
	for _, want := range []string{"<svg", "VIOLATION GlobalConsistency violated at step #269", "(lost: ", "#269 recv"} {
		if !strings.Contains(s, want) {
			t.Errorf("the SVG lacks %q", want)
		}
	}
}

// mermaidDiagram is what parseMermaid reads from the subset Mermaid
// export writes.
type mermaidDiagram struct {
	participants           map[string]string // alias -> name
	arrows, lost, inFlight int
	notes                  []string
}

// parseMermaid parses the sequence diagram subset the export writes, with
// Mermaid's rules for it: the header, participants declared before use,
// arrows ->> and -x between declared participants with a message, notes
// over a declared participant, and no ';' or '%%' inside text.
func parseMermaid(t *testing.T, text string) mermaidDiagram {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if lines[0] != "sequenceDiagram" {
		t.Fatalf("first line %q, want sequenceDiagram", lines[0])
	}
	d := mermaidDiagram{participants: map[string]string{}}
	part := regexp.MustCompile(`^    participant ([A-Za-z0-9_]+) as ([^;:]+)$`)
	arrow := regexp.MustCompile(`^    ([A-Za-z0-9_]+)(->>|-x|-\))([A-Za-z0-9_]+): ([^;]+)$`)
	note := regexp.MustCompile(`^    Note over ([A-Za-z0-9_]+): ([^;]+)$`)
	for _, l := range lines[1:] {
		if strings.Contains(l, "%%") {
			t.Fatalf("comment marker in %q", l)
		}
		switch {
		case part.MatchString(l):
			m := part.FindStringSubmatch(l)
			if d.arrows+d.lost+d.inFlight > 0 || len(d.notes) > 0 {
				t.Fatalf("participant after the messages: %q", l)
			}
			d.participants[m[1]] = m[2]
		case arrow.MatchString(l):
			m := arrow.FindStringSubmatch(l)
			for _, p := range []string{m[1], m[3]} {
				if _, ok := d.participants[p]; !ok {
					t.Fatalf("undeclared participant %s in %q", p, l)
				}
			}
			switch m[2] {
			case "-x":
				d.lost++
			case "-)":
				d.inFlight++
			default:
				d.arrows++
			}
		case note.MatchString(l):
			m := note.FindStringSubmatch(l)
			if _, ok := d.participants[m[1]]; !ok {
				t.Fatalf("undeclared participant in %q", l)
			}
			d.notes = append(d.notes, m[2])
		default:
			t.Fatalf("not Mermaid sequence syntax: %q", l)
		}
	}
	return d
}

func TestExportMermaidParses(t *testing.T) {
	d := parseMermaid(t, string(run(t, "--format", "mermaid", "--from", "260", "--to", "280", "--nodes", "n3,n5,n7", "--preds", preds())))
	if len(d.participants) != 3 {
		t.Fatalf("participants %v, want n3 n5 n7", d.participants)
	}
	tr := demoTrace(t)
	countArrows(t, tr, d, 260, 280, map[node.ID]bool{"n3": true, "n5": true, "n7": true})
	// At the trace's end, messages still in flight are open arrows, not
	// lost ones (a new user's export drew them crossed, where replay
	// events said "in flight").
	last := tr.Len() - 1
	end := parseMermaid(t, string(run(t, "--format", "mermaid", "--from", fmt.Sprint(last-15), "--to", fmt.Sprint(last))))
	all := map[node.ID]bool{}
	for _, id := range tr.Nodes {
		all[id] = true
	}
	countArrows(t, tr, end, last-15, last, all)
	if end.inFlight == 0 {
		t.Fatal("no message in flight at the demo trace's end: the test does not test them")
	}
	found := false
	for _, n := range d.notes {
		found = found || strings.Contains(n, "VIOLATION GlobalConsistency violated at step #269")
	}
	if !found {
		t.Fatalf("no note for the violation: %v", d.notes)
	}
}

// TestExportJSONL checks each line is one event, with the message decoded
// into its fields.
func TestExportJSONL(t *testing.T) {
	b := run(t, "--format", "jsonl", "--from", "260", "--to", "280", "--preds", preds())
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 21 {
		t.Fatalf("%d lines, want 21", len(lines))
	}
	tr := demoTrace(t)
	for i, l := range lines {
		var e struct {
			Step       int            `json:"step"`
			Kind       string         `json:"kind"`
			Msg        map[string]any `json:"msg"`
			Violations []string       `json:"violations"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if e.Step != 260+i || e.Kind != tr.Event(e.Step).Kind.String() {
			t.Fatalf("line %d is step %d %s", i, e.Step, e.Kind)
		}
		if e.Kind == "recv" && e.Msg["Round"] == nil {
			t.Fatalf("line %d: message not decoded into fields: %s", i, l)
		}
		if (e.Step == violationStep) != (len(e.Violations) == 1) {
			t.Fatalf("line %d: violations %v", i, e.Violations)
		}
	}
	// Cancellations are there, by name as timers_set names them (a new
	// user found none in the export).
	all := run(t, "--format", "jsonl", "--to", "400")
	var cancels []string
	for _, l := range strings.Split(strings.TrimSuffix(string(all), "\n"), "\n") {
		var e struct {
			Cancelled []string `json:"timers_cancelled"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		cancels = append(cancels, e.Cancelled...)
	}
	if len(cancels) == 0 || slices.ContainsFunc(cancels, func(c string) bool { return c != "round" }) {
		t.Fatalf("cancellations %v, want paxos's round timers", cancels)
	}
}

// A screened liveness interval is not a violation: no format marks it
// (each once marked every interval in the window).
func TestExportMarksNoScreenedInterval(t *testing.T) {
	script := filepath.Join(t.TempDir(), "screened.star")
	b, err := os.ReadFile(preds())
	if err != nil {
		t.Fatal(err)
	}
	// Violated at #270 only, never raised: a screened interval in the window.
	b = append(b, []byte("\nliveness(\"Quiet\", lambda: event.step != 270, alarm = lambda aux: False)\n")...)
	if err := os.WriteFile(script, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"jsonl", "mermaid", "perfetto", "dot", "shiviz"} {
		out := string(run(t, "--format", format, "--from", "260", "--to", "280", "--preds", script))
		if strings.Contains(out, "Quiet") {
			t.Errorf("%s marks the screened interval of Quiet:\n%s", format, out)
		}
		if !strings.Contains(out, "violated at step #269") && !strings.Contains(out, `"violation: GlobalConsistency"`) {
			t.Errorf("%s lost the violation at #269", format)
		}
	}
}

// A raised liveness interval is marked at its first step, and the mark
// gives the alarm's step (it did only when the alarm's witness differed).
func TestExportPerfettoGivesTheAlarmStep(t *testing.T) {
	script := filepath.Join(t.TempDir(), "raised.star")
	b, err := os.ReadFile(preds())
	if err != nil {
		t.Fatal(err)
	}
	// False from #265 on, raised two steps later.
	b = append(b, []byte("\nliveness(\"Stuck\", lambda: event.step < 265, alarm = lambda aux: event.step >= 267)\n")...)
	if err := os.WriteFile(script, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out := string(run(t, "--format", "perfetto", "--from", "260", "--to", "280", "--preds", script))
	if !strings.Contains(out, `"violation: Stuck"`) || !strings.Contains(out, `"alarm_step":267`) {
		t.Fatalf("the mark of Stuck does not give its alarm step #267:\n%s", out)
	}
}

// A node's name may hold spaces: the ShiViz regex took the host as \S+,
// and no line of such a run parsed (a hostile pass). It may hold braces
// and quotes too: the clock, matched up to its first '}', ended inside a
// name that held one, and no line of that node parsed (another).
func TestExportShiVizHostsWithSpaces(t *testing.T) {
	for _, names := range [][]node.ID{{"node 1", "node 2"}, {"a}b", `c {"d":1} e`}} {
		sys := &system.System{Name: "spaced", Codec: node.NewCodec().MustRegister(hello{}),
			New:      func(node.ID, system.Config) node.Handler { return &greeter{} },
			NodeName: func(i int) node.ID { return names[i] },
			Sim:      system.SimDefaults{Nodes: 2, Time: 20 * time.Millisecond}}
		dir := t.TempDir()
		trace, out := filepath.Join(dir, "s.lz4"), filepath.Join(dir, "s.log")
		var stdout, stderr bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(sys), Stdout: &stdout, Stderr: &stderr}
		for _, argv := range [][]string{{"sim", "spaced", "--seed", "1", "--drop", "0", "--churn", "0", "-o", trace}, {"export", trace, "--format", "shiviz", "-o", out}} {
			if code := app.Run(argv); code != 0 {
				t.Fatalf("%v: exit %d: %s", argv, code, stderr.String())
			}
		}
		b, _ := os.ReadFile(out)
		re := regexp.MustCompile("^" + export.ShiVizRegex + "$")
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")[2:]
		for _, l := range lines {
			m := re.FindStringSubmatch(l)
			if m == nil {
				t.Fatalf("line %q does not parse", l)
			}
			host := node.ID(m[re.SubexpIndex("host")])
			var clock map[string]int
			if err := json.Unmarshal([]byte(m[re.SubexpIndex("clock")]), &clock); err != nil || !slices.Contains(names, host) || clock[string(host)] == 0 {
				t.Fatalf("line %q: host %q, clock %v (%v)", l, host, clock, err)
			}
		}
		if len(lines) < 3 {
			t.Fatalf("only %d events", len(lines))
		}
	}
}

// Text a recording holds went into a DOT label raw: a timer named with
// escape sequences, a NUL or a bidi control made a file Graphviz refused
// ("syntax error") and a terminal printing it obeyed (a hostile pass).
func TestExportDotEscapesRecordedText(t *testing.T) {
	const hostile = "t\x00\x1b[2J\a\u202e\u2028x\"y\\"
	sys := &system.System{Name: "timers", Codec: node.NewCodec(),
		New: func(node.ID, system.Config) node.Handler { return &namedTimer{hostile} },
		Sim: system.SimDefaults{Nodes: 1, Time: 20 * time.Millisecond}}
	dir := t.TempDir()
	trace, out := filepath.Join(dir, "t.lz4"), filepath.Join(dir, "t.dot")
	var stdout, stderr bytes.Buffer
	app := &cli.App{Registry: system.NewRegistry(sys), Stdout: &stdout, Stderr: &stderr}
	for _, argv := range [][]string{{"sim", "timers", "--seed", "1", "-o", trace}, {"export", trace, "--format", "dot", "-o", out}} {
		if code := app.Run(argv); code != 0 {
			t.Fatalf("%v: exit %d: %s", argv, code, stderr.String())
		}
	}
	b, _ := os.ReadFile(out)
	dot := string(b)
	for i, r := range dot {
		if r != '\n' && printable.Unsafe(r) {
			t.Fatalf("raw %U at byte %d of the DOT file:\n%s", r, i, dot)
		}
	}
	if !strings.Contains(dot, `label="#1 timer\nt\\x00\\x1b[2J\\x07\\u202e\\u2028x\"y\\"`) {
		t.Fatalf("the timer's label is not the name escaped:\n%s", dot)
	}
}

type namedTimer struct{ name string }

func (n *namedTimer) Init(env node.Env)                       { env.After(time.Millisecond, n.name) }
func (n *namedTimer) Receive(node.Env, node.ID, node.Message) {}
func (n *namedTimer) Timer(node.Env, node.Timer)              {}

type hello struct{}

type greeter struct{ Got int }

func (g *greeter) Init(env node.Env) {
	for _, p := range env.Peers() {
		env.Send(p, hello{})
	}
}
func (g *greeter) Receive(node.Env, node.ID, node.Message) { g.Got++ }
func (g *greeter) Timer(node.Env, node.Timer)              {}

// docs/export.md gives the regex to paste into ShiViz: it must be the one
// the export writes (it had drifted from it; a new user).
func TestTheDocsShiVizRegexIsTheExports(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "export.md"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(doc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "(?<host>") {
			if got := strings.TrimSpace(line); got != export.ShiVizRegex {
				t.Fatalf("docs/export.md's regex:\n%s\nthe export's:\n%s", got, export.ShiVizRegex)
			}
			return
		}
	}
	t.Fatal("docs/export.md shows no ShiViz regex")
}

// countArrows checks the diagram's arrows against the trace: one per send
// between shown nodes in from..to (crossed when lost, open when in flight
// at the end) and one per receipt there of a message sent before or by
// a node not shown.
func countArrows(t *testing.T, tr *replay.Trace, d mermaidDiagram, from, to int, shown map[node.ID]bool) {
	t.Helper()
	sends, lost, inFlight := 0, 0, 0
	for s := from; s <= to; s++ {
		ev := tr.Event(s)
		if !shown[ev.Node] {
			continue
		}
		for i, m := range ev.Sends {
			if !shown[m.To] {
				continue
			}
			switch f := tr.Fate(ev, i); {
			case f.Fate == replay.InFlight:
				inFlight++
			case len(f.Receipts) == 0:
				lost++
			default:
				sends++
			}
		}
		if send, ok := tr.SendStep(ev); ok && shown[ev.From] && (send < from || !shown[tr.Event(send).Node]) {
			sends++ // drawn at its receipt
		}
	}
	if d.arrows != sends || d.lost != lost || d.inFlight != inFlight {
		t.Fatalf("#%d..#%d: %d arrows, %d lost, %d in flight; want %d, %d and %d", from, to, d.arrows, d.lost, d.inFlight, sends, lost, inFlight)
	}
}
