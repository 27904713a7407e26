//go:build unix

package statedb

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// tryLock takes an advisory lock on an open file or directory without
// waiting: exclusive, or shared when shared is set. ok is false when
// another open file holds a conflicting lock. The kernel drops the lock
// when the file is closed or its process dies, which is what makes a
// killed build's leftovers recognisable.
func tryLock(f *os.File, shared bool) (ok bool, err error) {
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// staleAge is how old an unlocked leftover must be before it is removed:
// long enough to cover the moment between creating a partial output and
// locking it (and between closing a built database and renaming it).
const staleAge = time.Minute

// noFollow makes an open fail on a symbolic link: the build lock is
// truncated and written, which through a link would be another file.
const noFollow = syscall.O_NOFOLLOW
