//go:build !unix

package statedb

import (
	"os"
	"time"
)

// tryLock always succeeds where advisory locks are not available: builds
// are then not serialised, and leftovers are judged by age alone.
func tryLock(*os.File, bool) (bool, error) { return true, nil }

// staleAge: with no locks to tell a live build, only day-old leftovers go.
const staleAge = 24 * time.Hour

// noFollow: the build lock's Lstat check stands alone here.
const noFollow = 0
