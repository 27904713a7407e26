package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A team's own binary (cli.Main with its systems, here the bundled one
// under another name) prints commands that run it, not replay: the
// reproduce and debug commands of a hunt, the next steps, the report's
// commands; and it merges its own shards' result files.
func TestCommandsNameTheProgram(t *testing.T) {
	dir := t.TempDir()
	kvcheck := filepath.Join(dir, "kvcheck")
	b, err := os.ReadFile(replayBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kvcheck, b, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) result {
		t.Helper()
		cmd := exec.Command(kvcheck, args...)
		cmd.Dir = dir
		return runCmd(t, cmd)
	}
	hunt := run("sim", "paxos", "--bug", "spec", "--seeds", "1-40", "--check", "builtin:paxos", "--results", "r.json", "-o", "first.lz4")
	if hunt.code != 1 {
		t.Fatalf("hunt: exit %d, want 1\n%s%s", hunt.code, hunt.stdout, hunt.stderr)
	}
	for _, want := range []string{"reproduce: kvcheck sim paxos --seed ", "debug:     kvcheck debug first.lz4 --preds builtin:paxos --at "} {
		if !strings.Contains(hunt.stdout, want) {
			t.Errorf("the hunt's output lacks %q:\n%s", want, hunt.stdout)
		}
	}
	if strings.Contains(hunt.stdout+hunt.stderr, "replay ") {
		t.Errorf("the hunt's output names replay:\n%s%s", hunt.stdout, hunt.stderr)
	}
	if r := run("sim", "paxos", "--seed", "1", "--steps", "200", "-o", "s.lz4"); r.code != 0 || !strings.Contains(r.stdout, "next: kvcheck info s.lz4; kvcheck events s.lz4") {
		t.Errorf("sim: exit %d, want next steps that run kvcheck:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run("check", "first.lz4", "builtin:paxos"); r.code != 1 || !strings.Contains(r.stdout, "debug the first violation: kvcheck debug first.lz4 ") {
		t.Errorf("check: exit %d, want its debug command to run kvcheck:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run("check", "s.lz4", "no-such.star"); r.code != 2 || !strings.HasPrefix(r.stderr, "kvcheck check: ") {
		t.Errorf("an error is not named by the program: exit %d\n%s", r.code, r.stderr)
	}
	merged := run("results", "merge", "r.json")
	if merged.code != 1 || !strings.Contains(merged.stdout, "reproduce: kvcheck sim paxos --seed ") {
		t.Errorf("kvcheck results merge of its own shard: exit %d\n%s%s", merged.code, merged.stdout, merged.stderr)
	}
	other := replay(t, dir, "results", "merge", "r.json")
	if other.code != 2 || !strings.Contains(other.stderr, `runs "kvcheck", not replay`) {
		t.Errorf("replay results merge of kvcheck's shard: exit %d, want 2 naming the program\n%s", other.code, other.stderr)
	}
}
