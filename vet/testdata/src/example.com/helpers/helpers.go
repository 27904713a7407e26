// Package helpers is another package of the same "module" (analysistest's
// GOPATH layout counts every non-standard package as one): handlers that
// call it are reported at the call, through facts.
package helpers

import (
	"time"

	"github.com/replaycheck/replaycheck/node"
)

func Stamp() int64 { return now().UnixNano() }

func now() time.Time { return time.Now() }

// Broadcast sends: harmless by itself, order-sensitive inside a map range.
func Broadcast(env node.Env, m node.Message) {
	for _, p := range env.Peers() {
		env.Send(p, m)
	}
}

// Pure computes: no fact, no finding.
func Pure(x int) int { return x * 2 }

// Base is embedded by handlers of other packages: its methods are theirs.
type Base struct{}

func (Base) Pause() { time.Sleep(time.Millisecond) }
