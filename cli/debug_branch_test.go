package cli

// The debugger's p and c (issue 13, item 3), end to end through replay
// debug on a simulation screen: the same searches as replay predict and
// replay critical, their branch traces opened in the same debugger, and b
// back to where the user left.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/scripts"
)

// debugSession runs replay debug with args on a simulation screen.
type debugSession struct {
	t      *testing.T
	screen *shotScreen
	done   chan int
	errb   *bytes.Buffer
}

func startDebug(t *testing.T, app *App, errb *bytes.Buffer, args ...string) *debugSession {
	t.Helper()
	screen := &shotScreen{SimulationScreen: &sizedScreen{SimulationScreen: tcell.NewSimulationScreen("UTF-8"), w: 200, h: 50}}
	app.Screen = screen
	d := &debugSession{t: t, screen: screen, done: make(chan int, 1), errb: errb}
	go func() { d.done <- app.Run(append([]string{"debug"}, args...)) }()
	t.Cleanup(func() {
		screen.InjectKey(tcell.KeyCtrlC, 0, 0)
		select {
		case <-d.done:
		case <-time.After(20 * time.Second):
			t.Error("the debugger did not quit")
		}
	})
	return d
}

// sizedScreen is a simulation screen of w x h from its start (Init sets
// the default 80 x 25).
type sizedScreen struct {
	tcell.SimulationScreen
	w, h int
}

func (s *sizedScreen) Init() error {
	if err := s.SimulationScreen.Init(); err != nil {
		return err
	}
	s.SetSize(s.w, s.h)
	return nil
}

// waitFor waits until the screen shows every s.
func (d *debugSession) waitFor(timeout time.Duration, s ...string) string {
	d.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		text := d.screen.text()
		ok := true
		for _, x := range s {
			ok = ok && strings.Contains(text, x)
		}
		if ok {
			return text
		}
		select {
		case code := <-d.done:
			d.t.Fatalf("debug exited %d: %s", code, d.errb.String())
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("the screen never showed %q:\n%s", s, text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func writeScript(t *testing.T, dir, name string) string {
	t.Helper()
	src, err := scripts.FS.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// From #1046 of paxos spec seed 8 (AcceptedRoundIncreasing breaks at
// #1050), the first futures of replay predict already break it again.
func TestDebugPredictOpensABranchAndGoesBack(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "spec.lz4")
	if code := app.Run([]string{"sim", "paxos", "--bug", "spec", "--seed", "8", "-o", trace}); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	script := writeScript(t, dir, "paxos.star")

	d := startDebug(t, app, &errb, trace, "--preds", script, "--at", "1046", "--budget", "5")
	d.waitFor(180*time.Second, "▶ #1046 ")
	d.screen.InjectKey(tcell.KeyRune, 'p', 0)
	text := d.waitFor(180*time.Second, "predicted from #1046")
	row := ""
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, "steps after #1046") {
			row = l
			break
		}
	}
	if !strings.Contains(row, "AcceptedRoundIncreasing") {
		t.Fatalf("the predictions do not list AcceptedRoundIncreasing first:\n%s", text)
	}
	var step int
	if i := strings.Index(row, "(#"); i < 0 {
		t.Fatalf("no step in %q", row)
	} else if _, err := fmt.Sscan(row[i+2:], &step); err != nil {
		t.Fatalf("no step in %q: %v", row, err)
	}
	branch := filepath.Join(dir, "spec-at1046-predict-1.lz4")
	if _, err := os.Stat(branch); err != nil {
		t.Fatalf("the branch trace was not written: %v", err)
	}

	// Enter opens the branch at its violation, with the breadcrumb.
	d.screen.InjectKey(tcell.KeyEnter, 0, 0)
	text = d.waitFor(180*time.Second, "spec.lz4 #1046 › spec-at1046-predict-1.lz4", "(b: back)")
	if !strings.Contains(text, "▶!#"+strconv.Itoa(step)+" ") {
		t.Fatalf("the branch did not open at its violation #%d:\n%s", step, text)
	}
	// The branch is the recording up to #1046, then the future.
	if !strings.Contains(text, "AcceptedRoundIncreasing") {
		t.Fatalf("the branch's violations are not shown:\n%s", text)
	}

	// b goes back to the parent at the step left; p there shows the
	// same list again without searching.
	d.screen.InjectKey(tcell.KeyRune, 'b', 0)
	text = d.waitFor(180*time.Second, "back from spec-at1046-predict-1.lz4 at #1046", "▶ #1046 ")
	if strings.Contains(text, "› spec-at1046") {
		t.Fatalf("the breadcrumb stayed after going back:\n%s", text)
	}
	d.screen.InjectKey(tcell.KeyRune, 'p', 0)
	d.waitFor(180*time.Second, "predicted from #1046")
}

// staleSynTrace simulates transport stale-syn into dir/stale.lz4: 4 s of
// virtual time keeps its AllAcknowledged alarm (#3513) and searches short.
func staleSynTrace(t *testing.T, app *App, dir string) string {
	t.Helper()
	trace := filepath.Join(dir, "stale.lz4")
	if code := app.Run([]string{"sim", "transport", "--bug", "stale-syn", "--seed", "1", "--time", "4s", "-o", trace}); code != 0 {
		t.Fatalf("sim: exit %d: %v", code, app.Stderr)
	}
	return trace
}

// On the AllAcknowledged alarm of transport stale-syn, c goes to the
// step replay critical names with the same walks, and the recovering walk
// opens as a branch.
func TestDebugCriticalGoesToTheCriticalStep(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := staleSynTrace(t, app, dir)
	script := writeScript(t, dir, "transport.star")
	out.Reset()
	if code := app.Run([]string{"critical", trace, script, "--predicate", "AllAcknowledged", "--walks", "2", "--walk-steps", "300",
		"-o", filepath.Join(dir, "cli-recovering.lz4"), "--json"}); code != 0 {
		t.Fatalf("critical: exit %d: %s", code, errb.String())
	}
	var want struct {
		Critical *struct {
			Step int `json:"step"`
		} `json:"critical"`
		LastLive *struct {
			Step      int `json:"step"`
			Walks     int `json:"walks"`
			Recovered int `json:"recovered"`
		} `json:"last_live"`
	}
	if err := json.Unmarshal(out.Bytes(), &want); err != nil || want.Critical == nil || want.LastLive == nil {
		t.Fatalf("critical --json: %v:\n%s", err, out.String())
	}
	crit, live := strconv.Itoa(want.Critical.Step), strconv.Itoa(want.LastLive.Step)

	d := startDebug(t, app, &errb, trace, "--preds", script, "--at", "3513", "--walks", "2", "--walk-steps", "300")
	// The alarm is known once the background indexing ends.
	d.waitFor(180*time.Second, "▶ #3513 ", "indexed 4077 steps")
	d.screen.InjectKey(tcell.KeyRune, 'c', 0)
	// Generous: the search replays walks, and CI shares two cores.
	// The alarm's interval (#4..end) is named: c searches that one.
	text := d.waitFor(180*time.Second, "critical transition of AllAcknowledged #4..end (2 walks per probe")
	status := lastRows(text, 2)
	if !strings.Contains(status, "#"+crit+"/") || !strings.Contains(status, "critical step of AllAcknowledged #4..end: #"+crit+";") {
		t.Fatalf("the cursor is not on the critical step #%s:\n%s", crit, text)
	}
	rate := "last live #" + live + ": " + strconv.Itoa(want.LastLive.Recovered) + " of " + strconv.Itoa(want.LastLive.Walks) + " walks recovered"
	if !strings.Contains(status, rate) || !strings.Contains(status, "probes ") {
		t.Fatalf("the status line lacks %q and the sparkline:\n%s", rate, status)
	}

	// Enter (the recovering walk is selected) opens it as a branch.
	d.screen.InjectKey(tcell.KeyEnter, 0, 0)
	text = d.waitFor(180*time.Second, "stale.lz4 #"+live+" › stale-recovering.lz4")
	if !strings.Contains(text, "#"+strconv.Itoa(want.LastLive.Step+1)+"/") {
		t.Fatalf("the recovering walk did not open after its fork:\n%s", text)
	}
	d.screen.InjectKey(tcell.KeyBackspace2, 0, 0)
	text = d.waitFor(180*time.Second, "back from stale-recovering.lz4 at #"+crit)
	if !strings.Contains(lastRows(text, 2), "#"+crit+"/") {
		t.Fatalf("Backspace did not go back to the critical step:\n%s", text)
	}
}

func lastRows(text string, n int) string {
	rows := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return strings.Join(rows[max(0, len(rows)-n):], "\n")
}

// A bundled script is named as the user named it, builtin:paxos, not by
// the temporary copy it is checked from (a hostile pass saw the cache
// path in the status line and the Violations panel's title).
func TestDebugNamesABundledScriptAsGiven(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &App{Registry: examples.Registry(), Stdout: &out, Stderr: &errb}
	trace := filepath.Join(dir, "p.lz4")
	if code := app.Run([]string{"sim", "paxos", "--seed", "1", "--time", "2s", "-o", trace}); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, errb.String())
	}
	d := startDebug(t, app, &errb, trace, "--preds", "builtin:paxos")
	text := d.waitFor(180*time.Second, "builtin:paxos: ")
	if strings.Contains(text, "paxos.star") {
		t.Fatalf("the screen names the script's copy:\n%s", text)
	}
}
