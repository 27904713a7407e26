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
// held about 600 bytes per event before: a 400,000-event file took
// about 250 MB, where about 30 MB are the program itself.
func TestInfoAndScheduleDoNotHoldTheEvents(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak resident memory is read from linux's rusage")
	}
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "9", "--time", "3000s", "--steps", "400000", "-o", "big.lz4"))
	peak := func(args ...string) int64 {
		cmd := exec.Command(replayBin, args...)
		cmd.Dir = dir
		mustOK(t, runCmd(t, cmd))
		return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss >> 10 // MB
	}
	if mb := peak("info", "big.lz4"); mb > 120 {
		t.Errorf("info of 400,000 events peaked at %d MB", mb)
	}
	// A schedule is an entry per event (224 bytes), but not the events
	// themselves: 400,000 events peaked at about 700 MB, now about 320.
	if mb := peak("schedule", "big.lz4", "-o", "big.schedule"); mb > 450 {
		t.Errorf("schedule of 400,000 events peaked at %d MB", mb)
	}
}
