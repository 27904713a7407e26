//go:build linux || darwin || freebsd || netbsd || openbsd

package statedb

import (
	"os"
	"syscall"
)

// fileIdentity is a file's inode and change time (0, 0 if unknown).
func fileIdentity(st os.FileInfo) (inode uint64, changeNS int64) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(sys.Ino), ctimeNS(sys)
}
