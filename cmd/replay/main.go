// Command replay is the record-and-replay predicate debugger with the
// bundled example systems registered. To debug your own system, build the
// same three lines with your system added to the registry.
package main

import (
	"os"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/system"
)

func main() {
	os.Exit(cli.Main(system.NewRegistry(paxos.System, chord.System)))
}
