// Package shrink makes a failing simulated run small: given the trace of
// a run that breaks a predicate, it searches for a run of the same system
// with fewer events (and fewer faults and nodes) that breaks the same
// predicate, by delta debugging over the run's schedule, and returns it as
// an ordinary trace. That is its one job; `replay shrink` is its front end.
//
// A candidate is the original schedule with events removed. It runs in the
// simulator under a chooser that follows what is left of the schedule
// leniently: an event is recognised by its cause (the kept event that
// sent the message or set the timer), so removing an event also removes
// everything it caused, and events the original never had are handled by
// one fixed policy. A candidate counts only if checking its trace, as
// `replay check` does, finds the same predicate failing.
//
// A fork is shrunk the same way over its continuation only: its recorded
// steps #0..#fork_at stay as they are, and every candidate continues a
// copy of the world at the fork step, rebuilt once from those steps.
package shrink
