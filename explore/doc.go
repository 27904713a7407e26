// Package explore searches the executions of a simulated system for one
// that breaks its predicates. A search is many simulations (sim.Run), each
// made by a sim.Chooser that a Strategy hands out and each checked by the
// same predicate engine as `replay check` (simtest.CheckTrace); the first
// failing run is kept as an ordinary trace, whose schedule re-runs it.
//
// Strategies are values (Coyote's design): New builds one by name, and
// Run drives any of them. Sampling strategies draw one execution per run:
//
//   - random: uniform among the enabled events (MaceMC's random walk,
//     Killian et al., NSDI 2007).
//   - pct: probabilistic concurrency testing (Burckhardt et al., ASPLOS
//     2010): random node priorities, depth−1 priority change points.
//   - delay-rr, delay-rtc, delay-prr: delaying explorers (Desai, Qadeer,
//     Seshia, FSE 2015) over a round-robin, run-to-completion or
//     probabilistic round-robin base scheduler, with stratified sampling.
//
// Searching strategies enumerate a bounded space and can exhaust it:
//
//   - delay-* with Exhaustive: stratified exhaustive search over delay
//     bounds with program-state caching.
//   - bfs, dfs: stateless search over global states (CHESS-style prefix
//     re-execution) with state-hash deduplication, bounded in depth.
//
// Every strategy can inject up to Params.Faults crashes of its own.
// Decisions that are not scheduling (message loss and duplication under
// the run's probabilities, handler randomness) come from hashes of the
// exploration seed and the event's identity, so an execution is a
// function of its scheduling decisions and the same seed gives the same
// exploration; see docs/exploration.md.
//
// The driver takes a Starter that begins a run, so a search can start
// from a world other than a fresh one (a fork of a recorded trace) once
// the simulator can.
package explore
