// Package spillfault breaks a spilled trace's temporary file under a
// running reader, for tests of what a failing disk does (Linux only: it
// reaches the unlinked file through /proc/self/fd).
package spillfault

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Truncate empties the spilled trace file that this process holds open
// under dir (replay.LoadOptions.TempDir). The file is already unlinked,
// so it is found through the process's descriptor for it.
func Truncate(tb testing.TB, dir string) { TruncateTo(tb, dir, 0) }

// TruncateTo cuts that file to the fraction keep of its length: the
// steps stored before the cut still read.
func TruncateTo(tb testing.TB, dir string, keep float64) {
	tb.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	for _, fd := range fds {
		p := filepath.Join("/proc/self/fd", fd.Name())
		target, err := os.Readlink(p)
		if err == nil && strings.HasPrefix(target, filepath.Join(dir, "replay-trace-")) {
			st, err := os.Stat(p)
			if err != nil {
				tb.Fatal(err)
			}
			if err := os.Truncate(p, int64(float64(st.Size())*keep)); err != nil {
				tb.Fatal(err)
			}
			return
		}
	}
	tb.Fatalf("no spilled trace file open under %s", dir)
}
