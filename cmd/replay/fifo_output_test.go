package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestOutputsToAPipeWithAReader: a named pipe given as an output is
// written in place, to whoever reads it. Looking at it first must not
// open it: a probe that opened and closed it ended its reader's input (a
// hunt's --results then blocked for good, and trapped Ctrl-C), and the
// check that a trace replaces only a trace opened it to read and waited
// for a writer that was itself (sim -o FIFO never started).
func TestOutputsToAPipeWithAReader(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want func([]byte) bool
	}{
		{"results", []string{"sim", "paxos", "--seeds", "1-2", "--check", "builtin:paxos", "--results", "out"},
			func(b []byte) bool { return len(b) > 0 && b[0] == '{' }},
		{"trace", []string{"sim", "paxos", "--seed", "1", "--steps", "100", "-o", "out"},
			func(b []byte) bool { return len(b) > 4 && string(b[:4]) == "\x04\x22\x4d\x18" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			fifo := filepath.Join(dir, "out")
			os.Remove(fifo)
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skipf("no FIFOs here: %v", err)
			}
			got := make(chan []byte, 1)
			go func() {
				b, _ := os.ReadFile(fifo)
				got <- b
			}()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, replayBin, c.args...)
			cmd.Dir = dir
			r := runCmd(t, cmd)
			if ctx.Err() != nil {
				t.Fatalf("replay %v did not end (killed after 60s)", c.args)
			}
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			select {
			case b := <-got:
				if !c.want(b) {
					t.Fatalf("the pipe's reader got %d bytes: %q", len(b), b[:min(len(b), 40)])
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the pipe's reader got nothing")
			}
		})
	}
}

// TestOutputsThatAreNotTracesSpareTraces: a result file, a schedule, an
// export or a report named like an existing trace (a mistyped
// --results ../s.lz4) replaced the recording silently; trace outputs
// already refused to replace what is not a trace.
func TestOutputsThatAreNotTracesSpareTraces(t *testing.T) {
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "1", "--steps", "300", "-o", "s.lz4"))
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "2", "--steps", "300", "-o", "keep.lz4"))
	before, _ := os.ReadFile(filepath.Join(dir, "keep.lz4"))
	for _, args := range [][]string{
		{"sim", "paxos", "--seeds", "1-2", "--check", "builtin:paxos", "--results", "keep.lz4"},
		{"explore", "paxos", "--check", "builtin:paxos", "--budget", "2", "--results", "keep.lz4", "-o", "found.lz4"},
		{"schedule", "s.lz4", "-o", "keep.lz4"},
		{"export", "s.lz4", "--format", "jsonl", "-o", "keep.lz4"},
		{"report", "s.lz4", "builtin:paxos", "-o", "keep.lz4"},
	} {
		badInput(t, replay(t, dir, args...), "keep.lz4 is a trace")
		if after, _ := os.ReadFile(filepath.Join(dir, "keep.lz4")); !bytes.Equal(after, before) {
			t.Fatalf("replay %v changed keep.lz4", args)
		}
	}
}
