// Command replay-vet runs replaycheck's handler analyzer (package vet)
// under go vet, which does the loading and caches facts per package:
//
//	go install github.com/replaycheck/replaycheck/cmd/replay-vet@latest
//	go vet -vettool=$(which replay-vet) ./...
//
// `replay vet` runs the same analyzer without go vet.
package main

import (
	"golang.org/x/tools/go/analysis/unitchecker"

	"github.com/replaycheck/replaycheck/vet"
)

func main() { unitchecker.Main(vet.Analyzer) }
