package live

import (
	"os"
	"syscall"
)

// fileReserver allocates f's blocks without growing it (FALLOC_FL_KEEP_SIZE),
// for unitFile.reserve.
func fileReserver(f *os.File) func(off, n int64) error {
	const keepSize = 0x1
	return func(off, n int64) error { return syscall.Fallocate(int(f.Fd()), keepSize, off, n) }
}
