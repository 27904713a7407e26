// Package routed declares CryptoRand, so its handlers' crypto/rand reads
// are recorded and replayed: no finding for them, the rest still counts.
package routed

import (
	cryptorand "crypto/rand"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

var System = &system.System{Name: "routed", CryptoRand: true}

type N struct{}

func (n *N) Init(env node.Env) { // want Init:`reaches\(clock:time.Now,cryptorand:crypto/rand.Read\)`
	b := make([]byte, 8)
	cryptorand.Read(b)
	_ = time.Now() // want `time.Now reads the wall clock`
}

func (n *N) Receive(env node.Env, from node.ID, m node.Message) {}
func (n *N) Timer(env node.Env, t node.Timer)                   {}
