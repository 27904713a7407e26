//go:build record

package live

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/lockserver"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

// TestLiveTaskTraceReplaysExactly: the lock service's tasks interleave
// however real time and TCP make them; the recording says which task ran
// when, and replay re-executes every node's tasks to the same states.
func TestLiveTaskTraceReplaysExactly(t *testing.T) {
	traces := t.TempDir()
	nodes := lockCluster(t, 3, traces, true)
	for _, id := range []node.ID{"c1", "c2", "c3"} {
		waitFor(t, string(id)+"'s workers to use locks", func() bool { return uses(t, nodes[id]) >= 20 })
	}
	time.Sleep(20 * time.Millisecond)
	var files []string
	for id, n := range nodes {
		if err := n.Close("test over"); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		files = append(files, filepath.Join(traces, TraceFileName(id)))
	}
	tr, err := replay.Load(files...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, system.NewRegistry(lockserver.System), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	resumes, hashed := 0, 0
	err = r.RunTo(tr.Len()-1, func(step int) error {
		if ev := r.Recorded(); ev.Kind == node.KindTask {
			resumes++
			if ev.HasStateHash {
				hashed++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("replay of the live recording: %v", err)
	}
	if resumes < 60 || hashed != resumes {
		t.Fatalf("%d task resumes replayed (%d with state hashes) in %d steps", resumes, hashed, tr.Len())
	}
}
