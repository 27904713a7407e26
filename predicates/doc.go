// Package predicates is the Starlark predicate engine: a script declares
// tables (rows are Go objects found in nodes' states), derived values with
// history, and safety and liveness predicates; after every replayed step the
// checker re-evaluates exactly what the step could have changed, and records
// safety violations as points and liveness violations as intervals screened
// by user-defined stability measures. A Segment checks part of a trace from
// a checkpoint and takes over from the previous one only where its state is
// the sequential run's (segment.go; package parcheck runs them).
// docs/predicates.md is the reference.
package predicates
