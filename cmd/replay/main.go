// Command replay is the record-and-replay predicate debugger with the
// bundled example systems registered. To debug your own system, build the
// same few lines with your system in the registry.
package main

import (
	"os"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/examples"
)

func main() {
	os.Exit(cli.Main(examples.Registry()))
}
