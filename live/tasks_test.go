package live

import (
	"context"
	"net"
	"testing"

	"github.com/replaycheck/replaycheck/examples/lockserver"
	"github.com/replaycheck/replaycheck/node"
)

// lockCluster runs the lock service (tasks at every clerk) over real TCP;
// traces, when set, is where the nodes record (with state hashes if
// hashes).
func lockCluster(t testing.TB, clerks int, traces string, hashes bool) map[node.ID]*Node {
	t.Helper()
	ids := lockserver.System.NodeIDs(clerks + 1)
	addrs := map[node.ID]string{}
	lns := map[node.ID]net.Listener{}
	for _, id := range ids {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[id], lns[id] = ln.Addr().String(), ln
	}
	nodes := map[node.ID]*Node{}
	for _, id := range ids {
		n, err := Start(Options{System: lockserver.System, ID: id, Addrs: addrs, DataDir: t.TempDir(), Listener: lns[id],
			Logger: quietLogger(), TraceDir: traces, StateHashes: hashes})
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = n
	}
	return nodes
}

// uses counts the lock uses a clerk's worker tasks completed.
func uses(t testing.TB, n *Node) int64 {
	t.Helper()
	var done int64
	if err := n.Read(context.Background(), func(h node.Handler) {
		c := h.(*lockserver.Client)
		done = c.DoneShared + c.DoneExclusive
	}); err != nil {
		t.Fatal(err)
	}
	return done
}

func TestTasksRunOnTheLiveRuntime(t *testing.T) {
	nodes := lockCluster(t, 3, "", false)
	for _, id := range []node.ID{"c1", "c2", "c3"} {
		waitFor(t, string(id)+"'s workers to use locks", func() bool { return uses(t, nodes[id]) >= 5 })
	}
	for id, n := range nodes {
		if err := n.Close("test over"); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if err := n.Err(); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
}
