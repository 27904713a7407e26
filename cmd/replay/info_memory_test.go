package main

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// TestInfoAndScheduleDoNotHoldTheEvents: info counted a file's events holding all
// of them, 1.7 GB for a file of 3M (a hostile pass); it counts them as
// they are read. Measured as the process's peak resident memory, which
// grew by about 600 bytes per event before.
func TestInfoAndScheduleDoNotHoldTheEvents(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak resident memory is read from linux's rusage")
	}
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "9", "--time", "3000s", "--steps", "400000", "-o", "big.lz4"))
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "9", "--time", "3000s", "--steps", "100000", "-o", "small.lz4"))
	peak := func(args ...string) int64 {
		cmd := exec.Command(replayBin, args...)
		cmd.Dir = dir
		mustOK(t, runCmd(t, cmd))
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10 // MB
	}
	// What info holds grows with the file by less than its read-ahead:
	// 300,000 more events cost about 180 MB before. (The peak itself
	// moves with the machine's load: 27 MB here, 128 MB under CI.)
	small, big := peak("info", "small.lz4"), peak("info", "big.lz4")
	if big-small > 60 {
		t.Errorf("info peaked at %d MB for 100,000 events and %d MB for 400,000", small, big)
	}
	if testing.Verbose() {
		t.Logf("info peaked at %d MB and %d MB", small, big)
	}
	// A schedule is an entry per event (224 bytes), but not the events
	// themselves: 400,000 events peaked at about 700 MB, now about 320.
	if mb := peak("schedule", "big.lz4", "-o", "big.schedule"); mb > 450 {
		t.Errorf("schedule of 400,000 events peaked at %d MB", mb)
	}
}
