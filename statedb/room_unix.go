//go:build unix

package statedb

import "golang.org/x/sys/unix"

// freeBytes is how many bytes the filesystem holding dir has free for
// this process; ok is false when it cannot be told.
func freeBytes(dir string) (free uint64, ok bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true
}
