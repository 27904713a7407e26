package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/raftkv"
	"github.com/replaycheck/replaycheck/live"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

// TestRecordedClusterSurvivesKill is the end-to-end test of production
// recording: three raftkv processes built with -tags record on 127.0.0.1,
// 2,400 writes through HTTP, a follower killed with kill -9 a third of the
// way in and restarted two thirds in, then caught up and stopped with
// SIGTERM. Every node must serve exactly the acknowledged writes, and the
// traces must hold what checkRecordedRun asserts.
func TestRecordedClusterSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three processes; skipped with -short")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir, "raftkv", ".", "record")
	c := newProcCluster(t, bin, dir, 3, true)
	for _, id := range c.ids {
		c.start(id)
	}
	leader := c.waitLeader(c.ids...)
	var victim string
	for _, id := range c.ids {
		if id != leader {
			victim = id
			break
		}
	}

	// Writers spread over the nodes that are up; the victim is left out
	// while it is down.
	var mu sync.Mutex
	up := slices.Clone(c.ids)
	target := func(writer, attempt int) string {
		mu.Lock()
		defer mu.Unlock()
		return up[(writer+attempt)%len(up)]
	}
	w := workload{writers: 16, perWriter: 150, keysPerWriter: 50}
	total := int64(w.total())
	var killOnce, restartOnce sync.Once
	var phases sync.WaitGroup
	killed := make(chan struct{})
	progress := func(done int64) {
		if done >= total/3 {
			killOnce.Do(func() {
				phases.Add(1)
				go func() {
					defer phases.Done()
					mu.Lock()
					up = slices.DeleteFunc(up, func(id string) bool { return id == victim })
					mu.Unlock()
					c.kill9(victim)
					close(killed)
				}()
			})
		}
		if done >= 2*total/3 {
			restartOnce.Do(func() {
				phases.Add(1)
				go func() {
					defer phases.Done()
					<-killed
					c.start(victim)
					mu.Lock()
					up = append(up, victim)
					mu.Unlock()
				}()
			})
		}
	}
	res := c.drive(w, target, progress)
	phases.Wait()
	if len(res.final) != w.writers*w.keysPerWriter {
		t.Fatalf("%d keys acknowledged, want %d", len(res.final), w.writers*w.keysPerWriter)
	}
	st := c.waitCaughtUp(c.ids...)
	t.Logf("%d writes in %v (%.0f/s); leader %s, killed follower %s; all nodes applied index %d",
		total, res.elapsed.Round(time.Millisecond), float64(total)/res.elapsed.Seconds(), leader, victim, st.Applied)

	// Every node serves exactly the acknowledged writes.
	served := map[node.ID]map[string]string{}
	for _, id := range c.ids {
		var kv map[string]string
		if err := c.getJSON(id, "/kv", &kv); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(kv, res.final) {
			t.Fatalf("node %s serves %d keys that differ from the %d acknowledged writes", id, len(kv), len(res.final))
		}
		for _, k := range slices.Sorted(maps.Keys(res.final)) {
			v, code, err := c.get(id, k)
			if err != nil || code != 200 || v != res.final[k] {
				t.Fatalf("GET %s on node %s: %d %q (%v), want %q", k, id, code, v, err, res.final[k])
			}
		}
		served[node.ID(id)] = kv
	}
	for _, id := range c.ids {
		c.stop(id)
	}
	checkRecordedRun(t, c.traceDir, served, recordedRun{
		killed: node.ID(victim), writes: res, replay: buildBinary(t, dir, "replay", "../replay"),
	})
}

// recordedRun is what the test knows about the run the traces record.
type recordedRun struct {
	killed node.ID    // the node killed with kill -9 and restarted
	writes workResult // what the clients saw
	replay string     // a replay binary
}

// checkRecordedRun checks the traces of a live run against the live nodes'
// final key-value maps. It is the one place for every check of a recorded
// live run: `replay verify` (0 divergences; the killed node's lost tail
// reported as such), `replay check ... scripts/raft.star` (no safety
// violation) and the comparison of the maps replay reconstructs with
// final belong here when the replayer exists. Until then it asserts what
// the traces show by themselves.
func checkRecordedRun(t *testing.T, traceDir string, final map[node.ID]map[string]string, run recordedRun) {
	t.Helper()
	var files []string
	written := map[string]bool{} // "key=value" of every Put found in a trace
	crypto := 0
	for id := range final {
		path := filepath.Join(traceDir, live.TraceFileName(id))
		files = append(files, path)
		f, err := record.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if f.Damage != nil {
			t.Fatalf("node %s: %v", id, f.Damage)
		}
		h := f.Header
		if h.System != "raftkv" || h.Driver != "live" || !slices.Equal(h.Recorded, []node.ID{id}) {
			t.Fatalf("node %s: header says system %q driver %q recorded %v", id, h.System, h.Driver, h.Recorded)
		}
		kinds := map[node.Kind]int{}
		var prev *node.Event
		for i, ev := range f.Events {
			kinds[ev.Kind]++
			if ev.Node != id {
				t.Fatalf("node %s's file holds an event of node %s", id, ev.Node)
			}
			// Seq and Lamport keep growing across the restart, although
			// the killed process's last events never reached the file.
			if prev != nil && (ev.Seq <= prev.Seq || ev.Lamport <= prev.Lamport) {
				t.Fatalf("node %s event %d: seq %d Lamport %d after seq %d Lamport %d", id, i, ev.Seq, ev.Lamport, prev.Seq, prev.Lamport)
			}
			if ev.Kind == node.KindRestart && i == 0 {
				t.Fatalf("node %s: the trace starts with a restart; the first run is missing", id)
			}
			prev = ev
			for _, nd := range ev.Nondet {
				if nd.Kind == node.NondetCrypto {
					crypto++
				}
			}
			collectPuts(t, ev, written)
		}
		if kinds[node.KindInit] != 1 {
			t.Fatalf("node %s: %d init events", id, kinds[node.KindInit])
		}
		if id == run.killed {
			// The killed process left its segment open; the restarted
			// one appended a second, closed by SIGTERM.
			if len(f.Segments) != 2 || len(f.Ends) != 1 || !f.Ended || f.Segments[1].Segment != 1 || kinds[node.KindRestart] != 1 {
				t.Fatalf("killed node %s: %d segments, %d ends, ended %v, %d restarts", id, len(f.Segments), len(f.Ends), f.Ended, kinds[node.KindRestart])
			}
		} else {
			if len(f.Segments) != 1 || !f.Ended || kinds[node.KindRestart] != 0 {
				t.Fatalf("node %s: %d segments, ended %v, %d restarts", id, len(f.Segments), f.Ended, kinds[node.KindRestart])
			}
			if reason := f.Ends[0].Reason; !strings.Contains(reason, "terminated") {
				t.Fatalf("node %s: end reason %q, want the SIGTERM", id, reason)
			}
			// Every input a node answered was recorded, and nothing else.
			in, acked, answered := kinds[node.KindInput], run.writes.acked[string(id)], run.writes.answered[string(id)]
			if in < acked || in > answered {
				t.Fatalf("node %s recorded %d inputs; it acknowledged %d writes and answered %d", id, in, acked, answered)
			}
		}
		if kinds[node.KindRecv] < len(run.writes.final) || kinds[node.KindTimer] == 0 {
			t.Fatalf("node %s: implausible event counts %v", id, kinds)
		}
		t.Logf("node %s: %d events %v, %d segments, %d bytes (%.1f bytes/event)", id, len(f.Events), kinds, len(f.Segments), f.Size, float64(f.Size)/float64(len(f.Events)))
	}
	if crypto == 0 {
		t.Fatal("no event recorded a crypto/rand read: raft's election jitter was not intercepted")
	}
	// Every acknowledged write is in the traces: as an input, or as an
	// entry in a raft message a node received.
	for k, v := range run.writes.final {
		if !written[k+"="+v] {
			t.Fatalf("the acknowledged write %s=%s appears in no trace", k, v)
		}
	}

	// replay info reads the files as the user would.
	out, err := exec.Command(run.replay, append([]string{"info", "--json"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("replay info: %v\n%s", err, out)
	}
	var infos []struct {
		File     string         `json:"file"`
		Segments int            `json:"segments"`
		Ended    bool           `json:"ended"`
		Damage   string         `json:"damage"`
		ByKind   map[string]int `json:"events_by_kind"`
	}
	if err := json.Unmarshal(out, &infos); err != nil {
		t.Fatalf("replay info --json: %v\n%s", err, out)
	}
	for _, in := range infos {
		wantSeg := 1
		if strings.HasSuffix(in.File, live.TraceFileName(run.killed)) {
			wantSeg = 2
			if in.ByKind["restart"] != 1 {
				t.Fatalf("replay info %s: %d restarts", in.File, in.ByKind["restart"])
			}
		}
		if in.Segments != wantSeg || !in.Ended || in.Damage != "" {
			t.Fatalf("replay info %s: %d segments, ended %v, damage %q", in.File, in.Segments, in.Ended, in.Damage)
		}
	}
	// Replay reproduces the recording exactly: 0 divergences, and the
	// killed node's lost tail is reported as a stretch of unknown state
	// that ends at its restart.
	out, err = exec.Command(run.replay, append([]string{"verify"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("replay verify: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "on 3 nodes: 0 divergences") {
		t.Fatalf("replay verify:\n%s", out)
	}
	if !strings.Contains(string(out), string(run.killed)+": state unknown after #") || !strings.Contains(string(out), "until its restart at #") {
		t.Fatalf("replay verify does not report the killed node's lost tail:\n%s", out)
	}
	t.Logf("replay verify: %s", strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))

	// The raft predicates hold: no safety violation anywhere in the run.
	args := append(append([]string{"check", "--fail-on", "safety"}, files...), "../../scripts/raft.star")
	out, err = exec.Command(run.replay, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("replay check scripts/raft.star: %v\n%s", err, out)
	}
	for _, p := range []string{"ElectionSafety", "LogMatching", "StateMachineSafety"} {
		if !strings.Contains(string(out), p) || strings.Contains(string(out), p+" (safety) violated") {
			t.Fatalf("replay check: %s not checked or violated:\n%s", p, out)
		}
	}

	// The state replay reconstructs is the state the live nodes served.
	tr, err := replay.Load(files...)
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, system.NewRegistry(raftkv.System), replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.RunTo(tr.Len()-1, nil); err != nil {
		t.Fatalf("replay: %v", err)
	}
	for id, kv := range final {
		h, ok := r.Instance(id).Handler().(*raftkv.Node)
		if !ok {
			t.Fatalf("node %s has no state at the end of the replay", id)
		}
		if !maps.Equal(h.KV, kv) {
			t.Fatalf("node %s: replay reconstructs %d keys, the live node served %d, and they differ", id, len(h.KV), len(kv))
		}
	}
	t.Logf("replayed %d steps; every node's reconstructed map equals what it served (%d keys)", tr.Len(), len(final[run.killed]))
}

// collectPuts notes every Put an event carries: a client input, or
// entries of a raft message (MsgProp forwarded to the leader, MsgApp to
// a follower).
func collectPuts(t *testing.T, ev *node.Event, into map[string]bool) {
	t.Helper()
	switch {
	case ev.Kind == node.KindInput:
		var p raftkv.Put
		if err := node.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatalf("%s seq %d: input is not a Put: %v", ev.Node, ev.Seq, err)
		}
		into[p.Key+"="+p.Value] = true
	case ev.Kind == node.KindRecv && ev.MsgType == "raftpb.Message":
		var m raftkv.Message
		if err := m.Unmarshal(ev.Payload); err != nil {
			t.Fatalf("%s seq %d: %v", ev.Node, ev.Seq, err)
		}
		for _, e := range m.M.GetEntries() {
			var p raftkv.Put
			if len(e.GetData()) > 0 && node.Unmarshal(e.GetData(), &p) == nil && p.Req != 0 {
				into[p.Key+"="+p.Value] = true
			}
		}
	}
}

// TestPlainBuildHasNoRecorder checks that a binary built without -tags
// record links no part of the recorder, and one built with it does.
func TestPlainBuildHasNoRecorder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries; skipped with -short")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		tags []string
		want bool
	}{{nil, false}, {[]string{"record"}, true}} {
		bin := buildBinary(t, dir, fmt.Sprintf("raftkv-%v", tc.want), ".", tc.tags...)
		out, err := exec.Command(goTool(), "tool", "nm", bin).Output()
		if err != nil {
			t.Fatalf("go tool nm: %v", err)
		}
		hasAppend := strings.Contains(string(out), "replaycheck/record.(*Writer).Append")
		hasPkg := strings.Contains(string(out), "replaycheck/replaycheck/record.")
		if hasAppend != tc.want || hasPkg != tc.want {
			t.Fatalf("tags %v: record.(*Writer).Append linked %v, any record symbol %v; want %v", tc.tags, hasAppend, hasPkg, tc.want)
		}
	}
}
