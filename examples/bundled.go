// Package examples lists the bundled example systems, each with seeded bugs.
package examples

import (
	"github.com/replaycheck/replaycheck/examples/chainrep"
	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/examples/lockserver"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/examples/raftkv"
	"github.com/replaycheck/replaycheck/examples/randtree"
	"github.com/replaycheck/replaycheck/examples/replicastore"
	"github.com/replaycheck/replaycheck/examples/transport"
	"github.com/replaycheck/replaycheck/system"
)

// All returns every bundled system.
func All() []*system.System {
	return []*system.System{paxos.System, chord.System, randtree.System, raftkv.System, replicastore.System, transport.System, chainrep.System, lockserver.System}
}

// Registry returns a registry of every bundled system.
func Registry() *system.Registry { return system.NewRegistry(All()...) }
