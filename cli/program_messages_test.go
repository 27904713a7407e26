package cli_test

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/examples"
)

// A team's own binary (cli.Main) names itself in the commands its errors
// suggest: a new user's pbcheck said "replay shrink", "replay sim
// --shard" and "replay check", which their users do not have.
func TestErrorsSuggestTheProgramsOwnCommands(t *testing.T) {
	t.Chdir(t.TempDir())
	run := func(args ...string) (int, string) {
		var out, errb bytes.Buffer
		app := &cli.App{Registry: examples.Registry(), Program: "kvcheck", Stdout: &out, Stderr: &errb}
		return app.Run(args), errb.String()
	}
	if code, e := run("sim", "paxos", "--seed", "1", "--time", "2s", "-o", "p.lz4"); code != 0 {
		t.Fatalf("sim: exit %d: %s", code, e)
	}
	replayCommand := regexp.MustCompile(`\breplay (sim|explore|check|shrink|debug)\b`)
	for _, args := range [][]string{
		{"results", "merge"},
		{"sim", "paxos", "--schedule", "p.lz4", "--seeds", "1-2"},
		{"critical", "p.lz4", "builtin:paxos", "--predicate", "GlobalConsistency"},
	} {
		code, e := run(args...)
		if code != cli.ExitBadInput {
			t.Errorf("%v: exit %d, want %d: %s", args, code, cli.ExitBadInput, e)
		}
		if replayCommand.MatchString(e) {
			t.Errorf("%v: the error suggests replay's commands, not kvcheck's: %s", args, e)
		}
		if !regexp.MustCompile(`\bkvcheck (sim|explore|check|shrink|debug)\b`).MatchString(e) {
			t.Errorf("%v: the error suggests no kvcheck command: %s", args, e)
		}
	}
}
