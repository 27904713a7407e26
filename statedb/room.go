package statedb

import (
	"fmt"
	"path/filepath"
)

// Badger writes its memtables and tables through files mapped into
// memory, and a write to a mapped file on a full disk is not an error but
// a fault that kills the process (a SIGBUS and a stack dump, with the
// partial database left filling the disk). So a build looks at the room
// left before it starts and as it goes, and stops with an error while it
// still can.
const (
	// roomAlways is what a build keeps free at every publish: its two
	// memtables and a table being flushed, with a margin.
	roomAlways = 48 << 20
	// roomPerStep estimates what a build writes per step (the bundled
	// systems take 120-200 bytes a step in a finished database), doubled
	// for the compaction that rewrites each part.
	roomPerStep = 400
	// roomMost caps the estimate: past a part (PartBytes) the earlier
	// parts are finished, compacted and need nothing more.
	roomMost = roomAlways + 2*PartBytes
)

// roomNeeded is about how much free space building a database of steps
// steps needs before it starts.
func roomNeeded(steps int) uint64 {
	return min(uint64(roomAlways)+uint64(steps)*roomPerStep, uint64(roomMost))
}

// checkRoom refuses to go on writing in dir with less than need bytes
// free (nothing is refused where free space cannot be told).
func checkRoom(dir string, need uint64) error {
	free, ok := freeBytes(dir)
	if !ok || free >= need {
		return nil
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return fmt.Errorf("the disk holding %s has %d MiB free, and building the trace database needs about %d MiB more: "+
		"a disk filling up under Badger's mapped files would crash the build; free some space, or give --db a directory on another disk",
		dir, free>>20, (need+(1<<20)-1)>>20)
}
