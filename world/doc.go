// Package world is the state of a whole distributed system after one step
// of a trace: every node's instance state (handler, durable store and
// runtime: seq, Lamport clock, timer table, up or down, incarnation), the
// messages in flight with their full content, the pending timers with their
// due times, and the time. It is what a fork hands from one driver to
// another: the replayer builds a World by re-executing a trace up to a step
// (replay.WorldAt), and the simulator continues from it (sim.RunFrom).
//
// The package is data only, so that neither replay nor sim needs to import
// the other: it imports node and nothing else of ours.
//
// Partitions are not part of a World: traces do not record them (a
// partition shows in a trace only as messages that never arrive), so a
// world built from a trace is always healed.
package world
