package statedb

import (
	"strings"
	"testing"
)

// TestABuildWithoutRoomSaysSo: a build that would fill the disk under
// Badger's mapped files is refused with the room it has and needs, not
// left to die of a fault (a hostile pass's 3 MB filesystem).
func TestABuildWithoutRoomSaysSo(t *testing.T) {
	dir := t.TempDir()
	if _, ok := freeBytes(dir); !ok {
		t.Skip("free space cannot be told here")
	}
	if err := checkRoom(dir, 1); err != nil {
		t.Fatalf("one byte: %v", err)
	}
	err := checkRoom(dir, 1<<62)
	if err == nil || !strings.Contains(err.Error(), "MiB free") || !strings.Contains(err.Error(), "--db") {
		t.Fatalf("no room: %v", err)
	}
	if small, big := roomNeeded(20_000), roomNeeded(100_000_000); small >= big || big > roomMost || small < roomAlways {
		t.Errorf("room needed: %d for 2*10^4 steps, %d for 10^8", small, big)
	}
}
