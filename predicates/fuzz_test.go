package predicates_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/predicates/internal/dd"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

// FuzzLoadScript loads arbitrary script bytes against a small trace and
// checks them: whatever the script, loading and checking end with a
// report or an error, never a panic, a hang or a runaway allocation
// (small budgets keep each input quick).
func FuzzLoadScript(f *testing.F) {
	for _, seed := range []string{
		"safety(\"P\", lambda: True)\n",
		"Cell = table(\"dd.Cell\", keep = 2)\nsafety(\"P\", lambda: forall(Cell, lambda c: c.V >= c.prev(\"V\", 0)))\n",
		"Item = table(\"dd.Item\")\nsafety(\"P\", lambda: not exists(Item, lambda i: i.Val < 0))\n",
		"Cell = table(\"dd.Cell\")\nd = derived(\"d\", lambda: [c.V for c in Cell], keep = 3)\nsafety(\"P\", lambda: len(d.history()) < 3)\n",
		"liveness(\"L\", lambda: event.step % 2 == 0, aux = lambda: {\"t\": now()}, alarm = lambda aux: aux[\"t\"] > SECOND)\n",
		"load(\"helper.star\", \"ok\")\nsafety(\"P\", ok)\n",
		"def f(n):\n    return f(n + 1)\nsafety(\"P\", lambda: f(0))\n",
		"l = []\nl.append(l)\nd = derived(\"d\", lambda: l)\nsafety(\"P\", lambda: True)\n",
		"def g():\n    d = {}\n    k = [0]\n    d[k[0]] = \"x\"\n    d[k[0]] += \"y\" * 3\n    d[len(k)] = [1]\n    d[len(k)] *= 2\n    return len(str(d)) > 0\nsafety(\"P\", g)\n",
		"safety(\"P\", lambda: len(list(range(100000000))) > 0)\n",
		"safety(\"P\", lambda: \"%s %s\" % (nodes(), event) != \"\" and \"{} {}\".format(1, 2) != \"\")\n",
		"safety(\"P\", lambda: len(\",\".join([str(i) for i in range(100)]).split(\",\")) == 100)\n",
		"x = 1 +\n",
		"safety(\"P\", lambda: 1)\nsafety(\"Q\", lambda: fail(\"no\"))\n",
	} {
		f.Add([]byte(seed))
	}
	tr := smallTrace(f)
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "helper.star"), []byte("def ok():\n    return True\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	reg := system.NewRegistry(dd.System)
	f.Fuzz(func(t *testing.T, src []byte) {
		// An input that runs away crashes the worker, so the fuzzer keeps it.
		slow := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("SLOW INPUT %q", src)) })
		defer slow.Stop()
		r, err := replay.New(tr, reg, replay.Options{})
		if err != nil {
			t.Fatal(err)
		}
		opts := predicates.Options{To: -1, MaxSteps: 100_000, MemoryBudget: 32 << 20, TimeBudget: 200 * time.Millisecond}
		c, err := predicates.LoadSource(filepath.Join(dir, "fuzz.star"), src, r, opts)
		if err != nil {
			return
		}
		rep, err := c.Run(predicates.RunOptions{})
		if err != nil {
			t.Fatalf("run: %v", err) // the trace replays: only a script problem could fail, and that is in the report
		}
		_ = rep.Err()
		if _, err := rep.MarshalJSON(); err != nil {
			t.Fatalf("report JSON: %v", err)
		}
	})
}
