package statedb

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchangeDirs swaps two directories' names in one step (renameat2's
// RENAME_EXCHANGE), so that a reader opening either name never finds it
// missing: Badger ends the process when a directory it is opening
// vanishes. errNoExchange when the file system cannot.
func exchangeDirs(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.ENOTSUP) {
		return errNoExchange
	}
	return err
}
