package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// A two-phase commit whose factory builds a different handler type for
// the coordinator and for the participants: the common shape (master and
// servers) that a table of the second type must be able to name.

type Prepare struct{}
type Vote struct{ Yes bool }
type Decide struct{ Commit bool }

type Coordinator struct {
	Votes    map[node.ID]bool
	Decision string
	bug      bool
}

type Participant struct {
	Vote    string
	Outcome string
	bug     bool
}

func (c *Coordinator) Init(env node.Env) {
	c.Votes = map[node.ID]bool{}
	for _, p := range env.Peers() {
		env.Send(p, Prepare{})
	}
}

func (c *Coordinator) Receive(env node.Env, from node.ID, m node.Message) {
	v, ok := m.(Vote)
	if !ok || c.Decision != "" {
		return
	}
	c.Votes[from] = v.Yes
	commit := true
	for _, p := range env.Peers() {
		yes, voted := c.Votes[p]
		switch {
		case !voted && !c.bug:
			return // wait for every vote
		case voted && !yes:
			commit = false
		}
	}
	// With the bug, the coordinator decides on the votes it has so far.
	c.Decision = map[bool]string{true: "commit", false: "abort"}[commit]
	for _, p := range env.Peers() {
		env.Send(p, Decide{Commit: commit})
	}
}

func (c *Coordinator) Timer(node.Env, node.Timer) {}

func (p *Participant) Init(node.Env) {}

func (p *Participant) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case Prepare:
		// The participant with the highest ID votes no: a correct
		// coordinator aborts.
		p.Vote = "no"
		for _, q := range env.Peers() {
			if q > env.Self() {
				p.Vote = "yes"
			}
		}
		env.Send(from, Vote{Yes: p.Vote == "yes"})
	case Decide:
		p.Outcome = map[bool]string{true: "commit", false: "abort"}[m.Commit]
	}
}

func (p *Participant) Timer(node.Env, node.Timer) {}

var twoPhase = &system.System{
	Name:    "twophase",
	Summary: "two-phase commit: one coordinator, participants of another type",
	Codec:   node.NewCodec().MustRegister(Prepare{}, Vote{}, Decide{}),
	New: func(id node.ID, cfg system.Config) node.Handler {
		if id == "coord" {
			return &Coordinator{bug: cfg.Bug == "early-commit"}
		}
		return &Participant{}
	},
	NodeName: func(i int) node.ID {
		if i == 0 {
			return "coord"
		}
		return node.ID("p" + string(rune('0'+i)))
	},
	Bugs: []system.Bug{{Name: "early-commit", Summary: "the coordinator decides on the first vote"}},
	Sim:  system.SimDefaults{Nodes: 4},
}

const twoPhaseScript = `
Coordinator = table("cli_test.Coordinator")
Participant = table("cli_test.Participant")

safety("CommitOnlyIfAllYes", lambda: forall(Participant, lambda p:
    implies(p.Outcome == "commit", all([q.Vote == "yes" for q in Participant]))))
safety("OneCoordinator", lambda: len(Coordinator) == 1)
`

// TestTwoHandlerTypesEndToEnd: a script naming the participants' type
// loads (it is not the first node's type), checks a correct run clean
// and catches the seeded bug with a participant as the witness.
func TestTwoHandlerTypesEndToEnd(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "2pc.star")
	if err := os.WriteFile(script, []byte(twoPhaseScript), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: system.NewRegistry(twoPhase), Stdout: &out, Stderr: &errb}
		return app.Run(args), out.String(), errb.String()
	}
	for _, tc := range []struct {
		bug      string
		wantCode int
		want     string
	}{
		{"none", cli.ExitOK, "0 violation"},
		{"early-commit", cli.ExitViolations, "CommitOnlyIfAllYes"},
	} {
		trace := filepath.Join(dir, tc.bug+".lz4")
		if code, out, errs := run("sim", "twophase", "--bug", tc.bug, "--drop", "0", "--churn", "0", "-o", trace); code != 0 {
			t.Fatalf("sim --bug %s: exit %d\n%s%s", tc.bug, code, out, errs)
		}
		code, out, errs := run("check", trace, script)
		if code != tc.wantCode || !strings.Contains(out, tc.want) {
			t.Errorf("check --bug %s: exit %d (want %d), output lacks %q:\n%s%s", tc.bug, code, tc.wantCode, tc.want, out, errs)
		}
	}
}

// TestDemoInAnotherBinary: a team's own binary runs the demo from the
// embedded paxos but cannot replay its trace, so it says which binary the
// printed commands need instead of leaving them to fail.
func TestDemoInAnotherBinary(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	app := &cli.App{Registry: system.NewRegistry(twoPhase), Stdout: &out, Stderr: &errb}
	if code := app.Run([]string{"demo", "-o", filepath.Join(dir, "d.lz4")}); code != cli.ExitOK {
		t.Fatalf("demo: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "does not register paxos") || !strings.Contains(out.String(), "     go run github.com/replaycheck/replaycheck/cmd/replay debug ") {
		t.Fatalf("demo in a binary without paxos does not print commands for the bundled replay:\n%s", out.String())
	}
}

// TestHelpInAnotherBinary: --help's examples run the bundled systems; in
// a binary that lacks them they say so and name the systems it knows,
// while the bundled binary's help stays as it is.
func TestHelpInAnotherBinary(t *testing.T) {
	help := func(reg *system.Registry, verb string) string {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: reg, Stdout: &out, Stderr: &errb}
		if code := app.Run([]string{verb, "--help"}); code != cli.ExitOK {
			t.Fatalf("%s --help: exit %d\n%s", verb, code, errb.String())
		}
		return out.String()
	}
	const note = "The examples name systems bundled with replaycheck; this binary knows: twophase."
	for _, verb := range []string{"sim", "explore", "shrink", "check", "critical"} {
		own, bundled := help(system.NewRegistry(twoPhase), verb), help(examples.Registry(), verb)
		if !strings.Contains(own, "Examples:\n  # "+note) {
			t.Errorf("%s --help in a binary of its own lacks the note before its examples:\n%s", verb, own)
		}
		if strings.Contains(bundled, "The examples name systems bundled") {
			t.Errorf("%s --help in the bundled binary has the note:\n%s", verb, bundled)
		}
	}
	// The bundled scripts are listed as such: usable in the bundled
	// binary, for systems it lacks in one's own.
	if h := help(system.NewRegistry(twoPhase), "check"); !strings.Contains(h, "for replaycheck's example systems,\nwhich this binary does not register") {
		t.Errorf("check --help in a binary of its own offers the bundled scripts as its own:\n%s", h)
	}
	if h := help(examples.Registry(), "check"); !strings.Contains(h, "Bundled: chainrep, chord,") || strings.Contains(h, "does not register") {
		t.Errorf("check --help in the bundled binary:\n%s", h)
	}
}
