//go:build record

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/raftkv"
	"github.com/replaycheck/replaycheck/live"
	"github.com/replaycheck/replaycheck/node"
)

// TestForkLiveRaftkv records a short live raftkv cluster (three nodes in
// this process over TCP on 127.0.0.1, real clocks, badger disks) with a
// few writes, then forks the recording in the middle and at its end: each
// fork replays without divergence and keeps the recording's steps.
// Run with: go test -tags record ./cmd/replay -run ForkLive
func TestForkLiveRaftkv(t *testing.T) {
	ids := []node.ID{"1", "2", "3"}
	addrs := map[node.ID]string{}
	lns := map[node.ID]net.Listener{}
	for _, id := range ids {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs[id], lns[id] = ln.Addr().String(), ln
	}
	dir := t.TempDir()
	traces := filepath.Join(dir, "traces")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	nodes := map[node.ID]*live.Node{}
	for _, id := range ids {
		n, err := live.Start(live.Options{System: raftkv.System, ID: id, Addrs: addrs, Listener: lns[id],
			DataDir: filepath.Join(dir, "data", string(id)), TraceDir: traces, StateHashes: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = n
	}
	defer func() {
		for _, n := range nodes {
			n.Close("test over")
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var leader *live.Node
	for leader == nil {
		if ctx.Err() != nil {
			t.Fatal("no raftkv leader within 20s")
		}
		for _, id := range ids {
			var is bool
			if err := nodes[id].Read(ctx, func(h node.Handler) { is = h.(*raftkv.Node).IsLeader() }); err != nil {
				t.Fatal(err)
			}
			if is {
				leader = nodes[id]
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 20 {
		if err := leader.Input(ctx, raftkv.Put{Req: uint64(i + 1), Key: fmt.Sprintf("k%d", i%5), Value: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // let the followers apply
	for _, id := range ids {
		if err := nodes[id].Close("terminated"); err != nil {
			t.Fatal(err)
		}
	}

	var files []string
	for _, id := range ids {
		files = append(files, filepath.Join(traces, live.TraceFileName(id)))
	}
	mustOK(t, replay(t, dir, append([]string{"verify"}, files...)...))
	n := stepsOf(t, dir, files...)
	if n < 50 {
		t.Fatalf("the recording holds only %d steps", n)
	}
	for _, step := range []int{n / 2, n - 1} {
		out := checkFork(t, dir, step, []string{"--time", "2s", "--drop", "0.05"}, files...)
		info := replay(t, dir, "info", out)
		mustOK(t, info)
		t.Logf("forked the live recording (%d steps) at #%d:\n%s", n, step, info.stdout)
	}
}
