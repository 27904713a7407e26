package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// A node that is busy twice: the first time a timer ends it, the second
// time (the bug) no timer is armed and only a later input ends it. Its
// liveness predicate Idle raises two alarms, in intervals that both
// close: walks (which get no inputs) recover from the first and not from
// the second. replay critical searched the first alarm, and neither it
// nor the debugger's c could search the second (a new user's lease
// server, with NoStarvation alarms at #762..#927 and #1818..#2226).

type (
	twiceStart struct{}
	twiceStop  struct{}
	twicePoke  struct{}
)

type TwiceBusy struct {
	Busy   bool
	Starts int
	Pokes  int
}

func (b *TwiceBusy) Init(node.Env) {}

func (b *TwiceBusy) Input(env node.Env, m node.Message) {
	switch m.(type) {
	case twiceStart:
		b.Busy = true
		b.Starts++
		if b.Starts == 1 {
			env.After(30*time.Millisecond, "done") // the second start arms none
		}
	case twiceStop:
		b.Busy = false
	case twicePoke:
		b.Pokes++
	}
}

func (b *TwiceBusy) Receive(node.Env, node.ID, node.Message) {}

func (b *TwiceBusy) Timer(node.Env, node.Timer) { b.Busy = false }

var twiceBusy = &system.System{
	Name:  "twice-busy",
	Codec: node.NewCodec().MustRegister(twiceStart{}, twiceStop{}, twicePoke{}),
	New:   func(node.ID, system.Config) node.Handler { return &TwiceBusy{} },
	Sim:   system.SimDefaults{Nodes: 1, Time: 300 * time.Millisecond},
	Scenario: func(ctl system.Controller) {
		for t := 5 * time.Millisecond; t <= 250*time.Millisecond; t += 5 * time.Millisecond {
			ctl.At(t, func() { ctl.Input("n1", twicePoke{}) })
		}
		ctl.At(20*time.Millisecond, func() { ctl.Input("n1", twiceStart{}) })
		ctl.At(120*time.Millisecond, func() { ctl.Input("n1", twiceStart{}) })
		ctl.At(200*time.Millisecond, func() { ctl.Input("n1", twiceStop{}) })
	},
}

const twiceScript = `B = table("cli.TwiceBusy")
liveness("Idle", lambda: forall(B, lambda b: not b.Busy), alarm = lambda aux: True)
`

// twiceBusyTrace records the run and says the steps of its two alarm
// intervals (as replay check prints them) and of the second start.
func twiceBusyTrace(t *testing.T, dir string) (trace, script string, first, second [2]int, secondStart int) {
	t.Helper()
	script = filepath.Join(dir, "twice.star")
	if err := os.WriteFile(script, []byte(twiceScript), 0o644); err != nil {
		t.Fatal(err)
	}
	trace = filepath.Join(dir, "twice.lz4")
	code, out, errb := runTwice("sim", "twice-busy", "--seed", "1", "--drop", "0", "--churn", "0", "-o", trace)
	if code != ExitOK {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb = runTwice("check", trace, script, "--json")
	if code != ExitViolations {
		t.Fatalf("check: exit %d, want two alarms\n%s%s", code, out, errb)
	}
	var rep struct {
		Violations []struct {
			Step    int  `json:"step"`
			EndStep int  `json:"end_step"`
			Alarm   bool `json:"alarm"`
		} `json:"violations"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	var ivs [][2]int
	for _, v := range rep.Violations {
		if v.Alarm && v.EndStep > 0 {
			ivs = append(ivs, [2]int{v.Step, v.EndStep})
		}
	}
	if len(ivs) != 2 {
		t.Fatalf("check: want two alarms whose intervals closed:\n%s", out)
	}
	_, events, _ := runTwice("events", trace)
	m := regexp.MustCompile(`#(\d+) .*twiceStart`).FindAllStringSubmatch(events, -1)
	if len(m) != 2 {
		t.Fatalf("events: want two starts:\n%s", events)
	}
	secondStart, _ = strconv.Atoi(m[1][1])
	return trace, script, ivs[0], ivs[1], secondStart
}

func runTwice(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	app := &App{Registry: system.NewRegistry(twiceBusy), Stdout: &out, Stderr: &errb}
	return app.Run(args), out.String(), errb.String()
}

// --alarm STEP searches the alarm whose interval holds STEP; without it,
// critical searches the first, as before, and says there are others.
func TestCriticalAlarmPicksTheInterval(t *testing.T) {
	dir := t.TempDir()
	trace, script, first, second, start := twiceBusyTrace(t, dir)
	iv := func(s [2]int) string { return "#" + strconv.Itoa(s[0]) + "..#" + strconv.Itoa(s[1]) }
	common := []string{"critical", trace, script, "--predicate", "Idle", "--walks", "2", "--stable", "50ms", "-o", filepath.Join(dir, "r.lz4")}

	// The default: the first alarm, whose walks recover.
	code, out, errb := runTwice(common...)
	if code != ExitOK || !strings.Contains(out, "closed at #"+strconv.Itoa(first[1])) || !strings.Contains(out, "has no critical transition") {
		t.Fatalf("critical: exit %d, want the first alarm's interval searched, without a transition\n%s%s", code, out, errb)
	}
	if !strings.Contains(errb, "Idle has 2 alarms ("+iv(first)+", "+iv(second)+")") || !strings.Contains(errb, "--alarm STEP") {
		t.Fatalf("critical does not say the predicate has another alarm and how to pick it:\n%s", errb)
	}

	// Any step of the second interval, its last as shown included.
	for _, at := range []int{second[0], (second[0] + second[1]) / 2, second[1]} {
		code, out, errb = runTwice(append(common, "--alarm", strconv.Itoa(at), "--json")...)
		if code != ExitOK {
			t.Fatalf("critical --alarm %d: exit %d\n%s%s", at, code, out, errb)
		}
		var res struct {
			Interval struct {
				Step    int `json:"step"`
				EndStep int `json:"end_step"`
			} `json:"interval"`
			Critical *struct {
				Step int `json:"step"`
			} `json:"critical"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("critical --alarm %d --json: %v\n%s", at, err, out)
		}
		if res.Interval.Step != second[0] || res.Interval.EndStep != second[1] || res.Critical == nil || res.Critical.Step != start {
			t.Fatalf("critical --alarm %d: want interval %s searched and the second start #%d as the critical step\n%s%s", at, iv(second), start, out, errb)
		}
		if strings.Contains(errb, "alarms (") {
			t.Fatalf("critical --alarm %d still says which alarm it searches by default:\n%s", at, errb)
		}
	}
	code, out, _ = runTwice(append(common, "--alarm", strconv.Itoa(second[1]))...)
	if code != ExitOK || !strings.Contains(out, "(--alarm "+strconv.Itoa(second[1])+": the alarm at #") ||
		!strings.Contains(out, "the violation is known at #") || !strings.Contains(out, "(alarm)") {
		t.Fatalf("critical --alarm: exit %d, want the chosen alarm named\n%s", code, out)
	}

	// A step in no alarm's interval, or past the trace: exit 2, saying
	// which alarms there are.
	for _, at := range []string{"0", strconv.Itoa(first[1] + 1), "99999", "-2"} {
		code, out, errb = runTwice(append(common, "--alarm", at)...)
		if code != ExitBadInput || !strings.Contains(errb, "--alarm "+at+": ") || strings.Count(errb, "\n") > 2 {
			t.Fatalf("critical --alarm %s: exit %d, want %d and one line\n%s%s", at, code, ExitBadInput, out, errb)
		}
	}
	if _, _, errb = runTwice(append(common, "--alarm", "0")...); !strings.Contains(errb, "Idle holds at #0; its alarms: "+iv(first)+", "+iv(second)) {
		t.Fatalf("critical --alarm 0 does not list the alarms:\n%s", errb)
	}
}

// The debugger's c on the second alarm, selected in the Violations panel
// (Tab to the panel selects the row at the cursor): the search is that
// alarm's, and the cursor goes to the second start. It searched the
// panel's first row, the first alarm, whose walks recover.
func TestDebugCriticalSearchesTheSelectedAlarm(t *testing.T) {
	dir := t.TempDir()
	trace, script, _, second, start := twiceBusyTrace(t, dir)
	var out, errb bytes.Buffer
	app := &App{Registry: system.NewRegistry(twiceBusy), Stdout: &out, Stderr: &errb}
	d := startDebug(t, app, &errb, trace, "--preds", script, "--at", strconv.Itoa(second[0]), "--walks", "2")
	d.waitFor(180*time.Second, "▶ Idle liveness #"+strconv.Itoa(second[0])+"..")
	d.screen.InjectKey(tcell.KeyTab, 0, 0)
	d.screen.InjectKey(tcell.KeyTab, 0, 0)
	d.screen.InjectKey(tcell.KeyRune, 'c', 0)
	// The list of probes, once the search ended.
	text := d.waitFor(180*time.Second, "critical transition of Idle", "walks per probe")
	status := lastRows(text, 2)
	if !strings.Contains(status, "critical step of Idle") || !strings.Contains(status, ": #"+strconv.Itoa(start)+"; last live") ||
		!strings.Contains(status, "#"+strconv.Itoa(start)+"/") {
		t.Fatalf("c did not trace back the selected second alarm to the second start #%d:\n%s", start, text)
	}
}

// With the run ended before the second busy spell's stop, its interval is
// open at the end and is the one searched. critical said the violation
// was known at the first alarm, of the interval that had closed (in the
// text and --json's violation_known_step), and so that the alarm came
// before the critical step (a new user's G-counter: "known at #1406
// (first alarm)" while searching #1633..end, alarmed at #1866).
func TestCriticalKnowsTheOpenIntervalsOwnAlarm(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "twice.star")
	if err := os.WriteFile(script, []byte(twiceScript), 0o644); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "open.lz4")
	if code, out, errb := runTwice("sim", "twice-busy", "--seed", "1", "--drop", "0", "--churn", "0", "--time", "180ms", "-o", trace); code != ExitOK {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errb)
	}
	code, out, errb := runTwice("check", trace, script, "--json")
	var rep struct {
		Violations []struct {
			Step      int  `json:"step"`
			EndStep   int  `json:"end_step"`
			Alarm     bool `json:"alarm"`
			AlarmStep int  `json:"alarm_step"`
		} `json:"violations"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != ExitViolations {
		t.Fatalf("check: exit %d %v\n%s%s", code, err, out, errb)
	}
	first, open := -1, -1
	for i, v := range rep.Violations {
		switch {
		case v.Alarm && v.EndStep > 0:
			first = i
		case v.Alarm && v.EndStep < 0:
			open = i
		}
	}
	if first < 0 || open < 0 {
		t.Fatalf("check: want a closed alarm and an alarm open at the end:\n%s", out)
	}
	want := rep.Violations[open]
	common := []string{"critical", trace, script, "--predicate", "Idle", "--walks", "2", "--stable", "50ms", "-o", filepath.Join(dir, "r.lz4")}
	code, out, errb = runTwice(append(common, "--json")...)
	var res struct {
		Interval struct {
			Step int `json:"step"`
		} `json:"interval"`
		Critical *struct {
			Step  int `json:"step"`
			Known int `json:"violation_known_step"`
		} `json:"critical"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != ExitOK {
		t.Fatalf("critical --json: exit %d %v\n%s%s", code, err, out, errb)
	}
	if res.Interval.Step != want.Step || res.Critical == nil || res.Critical.Known != want.AlarmStep {
		t.Fatalf("critical --json: want the interval #%d.. searched and known at its alarm #%d (not the closed one's #%d)\n%s",
			want.Step, want.AlarmStep, rep.Violations[first].AlarmStep, out)
	}
	code, out, errb = runTwice(common...)
	if code != ExitOK || !strings.Contains(out, "the violation is known at #"+strconv.Itoa(want.AlarmStep)+" (alarm)") {
		t.Fatalf("critical: exit %d, want the open interval's alarm #%d named\n%s%s", code, want.AlarmStep, out, errb)
	}
}

// A bad --stable named --walk-time too, which was not given (a hostile
// pass), and said "positive" while 0 is accepted.
func TestCriticalDurationFlagsNameThemselves(t *testing.T) {
	dir := t.TempDir()
	trace, script, _, _, _ := twiceBusyTrace(t, dir)
	for flag, want := range map[string]string{"--stable": "--stable -1s: want 0 or more", "--walk-time": "--walk-time -1s: want a positive duration"} {
		code, _, errb := runTwice("critical", trace, script, "--predicate", "Idle", flag, "-1s")
		if code != ExitBadInput || !strings.Contains(errb, want) || strings.Count(errb, "--") != 1 {
			t.Errorf("critical %s -1s: exit %d, stderr %q, want %q alone", flag, code, errb, want)
		}
	}
}
