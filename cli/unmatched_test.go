package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// A node whose role sits behind an interface, as most real systems' do:
// a table's type cannot be ruled out when the script loads.

type Role interface{ role() }

type Leading struct{ Term int }

func (*Leading) role() {}

type Roled struct{ Role Role }

func (s *Roled) Init(env node.Env) {
	s.Role = &Leading{Term: 1}
	env.After(time.Millisecond, "tick")
}

func (s *Roled) Receive(node.Env, node.ID, node.Message) {}

func (s *Roled) Timer(env node.Env, _ node.Timer) { env.After(time.Millisecond, "tick") }

var roled = &system.System{
	Name:  "roled",
	Codec: node.NewCodec(),
	New:   func(node.ID, system.Config) node.Handler { return &Roled{} },
	Sim:   system.SimDefaults{Nodes: 2, Time: 50 * time.Millisecond},
}

// A misspelt table passed a seed hunt and an exploration with exit 0
// and not a word: only check warned. Both now warn, and name the type
// meant.
func TestSearchesWarnOfTablesThatMatchNothing(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "typo.star")
	if err := os.WriteFile(script, []byte(`
L = table("cli_test.Leadng")
safety("TermPositive", lambda: forall(L, lambda l: l.Term > 0))
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := replayOf(roled)
	want := `table("cli_test.Leadng") matched no object in the steps checked, so its predicates held vacuously: did you mean "cli_test.Leading"?`
	code, out, errs := run("sim", "roled", "--seeds", "1-3", "--check", script, "-o", filepath.Join(dir, "h.lz4"))
	if code != 0 || !strings.Contains(out, "warning: in all 3 runs: "+want) {
		t.Errorf("hunt: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run("explore", "roled", "--check", script, "--budget", "2", "-o", filepath.Join(dir, "e.lz4"))
	if code != 0 || !strings.Contains(out, "warning: in all 2 runs: "+want) {
		t.Errorf("explore: exit %d\n%s%s", code, out, errs)
	}
	// Finding nothing, explore says what its runs cannot reach (a new
	// user's failure detector needed a slow reply).
	if !strings.Contains(errs, "explore: note: explored runs deliver each message at the earliest moment") {
		t.Errorf("explore that found nothing: no note of what it cannot reach:\n%s", errs)
	}
	code, out, errs = run("explore", "roled", "--check", script, "--budget", "2", "--json", "-o", filepath.Join(dir, "e.lz4"))
	if code != 0 || !strings.Contains(out, `"did_you_mean": "cli_test.Leading"`) {
		t.Errorf("explore --json: exit %d\n%s%s", code, out, errs)
	}
	// Shards of a hunt: each shard's result file keeps its tables, and
	// the merged report warns of those no run of any shard matched.
	var files []string
	for i := range 2 {
		res := filepath.Join(dir, fmt.Sprintf("shard%d.json", i))
		files = append(files, res)
		code, out, errs = run("sim", "roled", "--seeds", "1-3", "--check", script, "--shard", fmt.Sprintf("%d/2", i), "--results", res, "-o", filepath.Join(dir, "s.lz4"))
		if code != 0 {
			t.Fatalf("shard %d: exit %d\n%s%s", i, code, out, errs)
		}
	}
	code, out, errs = run(append([]string{"results", "merge"}, files...)...)
	if code != 0 || !strings.Contains(out, "warning: in all 3 runs: "+want) {
		t.Errorf("results merge: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run(append([]string{"results", "merge", "--json"}, files...)...)
	if code != 0 || !strings.Contains(out, `"did_you_mean": "cli_test.Leading"`) {
		t.Errorf("results merge --json: exit %d\n%s%s", code, out, errs)
	}
	// A table that has rows is not warned of.
	if err := os.WriteFile(script, []byte(`
L = table("cli_test.Leading")
safety("TermPositive", lambda: forall(L, lambda l: l.Term > 0))
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = run("sim", "roled", "--seeds", "1-3", "--check", script, "-o", filepath.Join(dir, "h.lz4"))
	if code != 0 || strings.Contains(out, "warning") {
		t.Errorf("hunt of a good script: exit %d\n%s%s", code, out, errs)
	}
}

// A new user's hunt over seeds that held the bug exited 0 with a
// misspelt table: a warning is easy to miss in CI. --strict-tables makes
// the table that matched nothing exit 4 in check, hunts and explore, and
// a good script still exits 0 under it.
func TestStrictTablesMakeATableThatMatchedNothingAnError(t *testing.T) {
	dir := t.TempDir()
	typo := filepath.Join(dir, "typo.star")
	good := filepath.Join(dir, "good.star")
	for path, tbl := range map[string]string{typo: "cli_test.Leadng", good: "cli_test.Leading"} {
		if err := os.WriteFile(path, []byte(fmt.Sprintf(`
L = table(%q)
safety("TermPositive", lambda: forall(L, lambda l: l.Term > 0))
`, tbl)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := replayOf(roled)
	trace := filepath.Join(dir, "r.lz4")
	if code, out, errs := run("sim", "roled", "-o", trace); code != 0 {
		t.Fatalf("sim: exit %d\n%s%s", code, out, errs)
	}
	const says = `--strict-tables: 1 table matched no object`
	for _, c := range []struct {
		name string
		args []string
	}{
		{"check", []string{"check", trace}},
		{"hunt", []string{"sim", "roled", "--seeds", "1-3", "-o", filepath.Join(dir, "h.lz4"), "--check"}},
		{"explore", []string{"explore", "roled", "--budget", "2", "-o", filepath.Join(dir, "e.lz4"), "--check"}},
	} {
		code, out, errs := run(append(append(c.args, typo), "--strict-tables")...)
		if code != 4 || !strings.Contains(errs, says) || !strings.Contains(errs, `did you mean "cli_test.Leading"?`) {
			t.Errorf("%s --strict-tables of a misspelt table: exit %d\n%s%s", c.name, code, out, errs)
		}
		if code, out, errs := run(append(c.args, typo)...); code != 0 {
			t.Errorf("%s of a misspelt table without --strict-tables: exit %d, want 0 (a warning)\n%s%s", c.name, code, out, errs)
		}
		if code, out, errs := run(append(append(c.args, good), "--strict-tables")...); code != 0 {
			t.Errorf("%s --strict-tables of a good script: exit %d\n%s%s", c.name, code, out, errs)
		}
	}
	// A shard that matched nothing exits 4 and says so in its result
	// file; the merge of such shards exits 4 too.
	var files []string
	for i := range 2 {
		res := filepath.Join(dir, fmt.Sprintf("shard%d.json", i))
		files = append(files, res)
		code, out, errs := run("sim", "roled", "--seeds", "1-3", "--check", typo, "--strict-tables", "--shard", fmt.Sprintf("%d/2", i), "--results", res, "-o", filepath.Join(dir, "s.lz4"))
		if code != 4 {
			t.Fatalf("shard %d: exit %d\n%s%s", i, code, out, errs)
		}
	}
	if code, out, errs := run(append([]string{"results", "merge"}, files...)...); code != 4 {
		t.Errorf("results merge of strict shards that matched nothing: exit %d\n%s%s", code, out, errs)
	}
	// A sweep with a slice missing is not judged: the slice not run may
	// have matched the table (it exited 4 where 130 says "not done").
	if code, out, errs := run("results", "merge", "--partial", files[0]); code != 130 || !strings.Contains(errs, "missing") {
		t.Errorf("results merge --partial of one strict shard: exit %d\n%s%s", code, out, errs)
	}
}

// A run that breaks two predicates is two findings of explore --all, and
// results merge refused the file explore itself wrote ("2 runs with 4
// failures (each failure is a run) ... edited?": a new user's SWIM).
func TestMergeTakesAnExplorationWhoseRunBrokeTwoPredicates(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "two.star")
	if err := os.WriteFile(script, []byte(`
L = table("cli_test.Leading")
safety("TermBelowOne", lambda: forall(L, lambda l: l.Term < 1))
safety("TermAboveOne", lambda: forall(L, lambda l: l.Term > 1))
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := replayOf(roled)
	res := filepath.Join(dir, "r.json")
	code, out, errs := run("explore", "roled", "--check", script, "--budget", "1", "--all", "--results", res, "-o", filepath.Join(dir, "e.lz4"))
	if code != 1 || !strings.Contains(out, "TermBelowOne") || !strings.Contains(out, "TermAboveOne") {
		t.Fatalf("explore: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = run("results", "merge", res)
	if code != 1 || !strings.Contains(out, "TermBelowOne") || !strings.Contains(out, "TermAboveOne") {
		t.Fatalf("results merge of explore --all's own file: exit %d\n%s%s", code, out, errs)
	}
}
