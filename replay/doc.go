// Package replay merges traces into the causal total order, validates them,
// and re-executes every node in one process, feeding back the recorded
// nondeterminism and stopping at the first divergence from the recording.
package replay
