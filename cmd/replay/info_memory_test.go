package main

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// TestInfoDoesNotHoldTheEvents: info counted a file's events holding all
// of them, 1.7 GB for a file of 3M (a hostile pass); it counts them as
// they are read. Measured as the process's peak resident memory, which
// held about 600 bytes per event before: a 400,000-event file took
// about 250 MB, where about 30 MB are the program itself.
func TestInfoDoesNotHoldTheEvents(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("peak resident memory is read from linux's rusage")
	}
	dir := t.TempDir()
	mustOK(t, replay(t, dir, "sim", "paxos", "--seed", "9", "--time", "3000s", "--steps", "400000", "-o", "big.lz4"))
	cmd := exec.Command(replayBin, "info", "big.lz4")
	cmd.Dir = dir
	r := runCmd(t, cmd)
	mustOK(t, r)
	peakKB := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
	if peakKB > 120<<10 {
		t.Fatalf("info of 400,000 events peaked at %d MB", peakKB>>10)
	}
}
