//go:build race

package main

// raceDetector: the race detector slows the bundled systems' long runs
// about tenfold, past the test binary's timeout.
const raceDetector = true
