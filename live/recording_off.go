//go:build !record

package live

import (
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/state"
)

// Recording reports whether this binary was built with -tags record. Built
// without it, every recording call below is behind `if Recording`, which
// the compiler removes, so the binary carries no recorder at all.
const Recording = false

// recorder is never created in a build without the record tag.
type recorder struct{}

func openRecorder(recorderConfig) (*recorder, error) { return nil, errNotRecording }

func (*recorder) append(*node.Event)                                   {}
func (*recorder) close(string, TransportStats, []state.NodeHash) error { return nil }
func (*recorder) segment() int                                         { return 0 }
func (*recorder) err() error                                           { return nil }
