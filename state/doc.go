// Package state reads a node's observed state by reflection: the handler
// struct with its unexported fields, maps in sorted key order, pointers
// followed with cycle detection, and fields tagged `replay:"-"` left out.
// Replay, predicates and the debugger all see state through it.
package state
