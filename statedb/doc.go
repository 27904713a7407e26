// Package statedb is the trace database the debugger reads: built once
// per trace by one replay, it answers what would otherwise need a replay
// from the start.
//
// It is a Badger store in managed mode, where every write carries its own
// version, and versions are steps (version = step + 1). It holds:
//
//   - the step index: for every step its node, seq, Lamport clock, kind,
//     time, one-line summary (replay.Renderer), the handler's regenerated log
//     lines and the message links (the step that sent a received message,
//     the steps that received each sent one);
//   - every field of every node's observed state (state.Flatten, plus the
//     pseudo-fields @status and @timers) as versions keyed by the step that
//     wrote them: a field's history is an iteration over its versions;
//   - per node, the changes of each step (a delta) and, every SnapshotEvery
//     changes (more for a big state: checkpointEvery), the whole flattened
//     state (a checkpoint): the state at step s
//     is a read at version s of the checkpoint plus the few deltas after it;
//   - beside the store, in a file of its own (predsFile), the results of a
//     predicates script: violations and the steps where each predicate
//     flips, so "run until a predicate changes" is one search.
//
// A database is built in a temporary directory and swapped into place when
// complete; it records a fingerprint of the trace files and is rebuilt when
// they change. The store is never written after its build: readers open it
// read-only, so any number of processes share it, and one process at a
// time builds (a lock file beside it; see partial.go for leftovers).
package statedb
