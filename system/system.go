// Package system describes a distributed program to the drivers: how to
// build its nodes, which message types it uses, which seeded bugs it has and
// how the simulator exercises it. Bundled examples and users' own systems
// register the same way, in a Registry the CLI is given.
package system

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

// Config is what a system's factory is told about the run. It is stored in
// every trace header, so a replay rebuilds nodes exactly as recorded.
type Config struct {
	Bug    string            // "none" or one of the system's Bugs
	Nodes  []node.ID         // every node of the run, sorted
	Params map[string]string // system-specific settings (recorded verbatim)

	// shared holds values derived once per run (Shared); nil in a Config
	// built as a literal, which then derives them on every call.
	shared *sharedValues
}

// NewConfig is the Config of one run. Drivers build one and hand it to
// every node's factory, so that values derived from it with Shared are
// computed once per run, not once per node.
func NewConfig(bug string, nodes []node.ID, params map[string]string) Config {
	return Config{Bug: bug, Nodes: nodes, Params: params, shared: &sharedValues{m: map[string]any{}}}
}

type sharedValues struct {
	mu sync.Mutex
	m  map[string]any
}

// Shared returns the value build derives from this configuration, built
// on the first call for key and shared by every node of the run after
// that. It is for immutable tables every node needs (a ring's position of
// every node): built per node they cost O(nodes) time and memory each,
// O(nodes²) for the run. build must depend on the Config alone, and the
// value must never be modified (every node sees the same one).
func (c Config) Shared(key string, build func() any) any {
	if c.shared == nil {
		return build()
	}
	c.shared.mu.Lock()
	defer c.shared.mu.Unlock()
	if v, ok := c.shared.m[key]; ok {
		return v
	}
	v := build()
	c.shared.m[key] = v
	return v
}

// Param returns a parameter or def when it is unset.
func (c Config) Param(name, def string) string {
	if v, ok := c.Params[name]; ok {
		return v
	}
	return def
}

// CheckParams reports a parameter that is not one of known: a misspelt
// --param would otherwise be recorded and silently ignored.
func (c Config) CheckParams(known ...string) error {
	for _, k := range slices.Sorted(maps.Keys(c.Params)) {
		switch {
		case len(known) == 0:
			return fmt.Errorf("unknown parameter %q (takes none)", k)
		case !slices.Contains(known, k):
			return fmt.Errorf("unknown parameter %q (known: %s)", k, strings.Join(slices.Sorted(slices.Values(known)), ", "))
		}
	}
	return nil
}

// Bug is a seeded defect a system can be built with.
type Bug struct {
	Name    string
	Summary string
}

// Param documents one --param key a system reads (Config.Param).
type Param struct {
	Name string
	// Default is the value a run without the key uses, as the system's
	// code falls back to it (shown in help; "" for none).
	Default string
	Summary string
}

// SimDefaults are a system's default simulation settings; command-line flags
// override them. A zero field takes the simulator's own default: 3 nodes,
// 100,000 steps, 1 minute of virtual time, latency 1-10ms, downtime
// 50-500ms; no loss, duplication or churn.
type SimDefaults struct {
	Nodes      int
	LatencyMin time.Duration
	LatencyMax time.Duration
	Drop       float64 // probability a message is lost
	Dup        float64 // probability a message is delivered twice
	Churn      float64 // crashes per node per virtual second (0: none)
	DownMin    time.Duration
	DownMax    time.Duration
	Steps      int           // stop after this many events
	Time       time.Duration // stop at this virtual time
}

// Controller is what a scenario drives. The simulator implements it.
// Everything a scenario schedules happens in virtual time, as events of the
// recorded run.
type Controller interface {
	Nodes() []node.ID
	Config() Config
	// Now is the virtual time since the start of the run.
	Now() time.Duration
	// Rand is the scenario's generator, derived from the run's seed
	// (--seed): in an exploration every run draws from the same one, so
	// the runs share a workload and differ in their schedules.
	Rand() *rand.Rand
	// At runs fn at virtual time t (now if t is in the past).
	At(t time.Duration, fn func())
	// Input delivers an external request to a node now. An input to a
	// node that is down is lost (counted as inputs_lost in the run's
	// end record), not held for its restart.
	Input(id node.ID, m node.Message)
	// Crash and Restart a node now. A node the scenario crashed stays
	// down until the scenario restarts it, even if it was already down
	// (churn's or a search's crash): their planned restart is dropped.
	// Crashing a node that is down, or restarting one that is up, runs
	// no event.
	Crash(id node.ID)
	Restart(id node.ID)
	// Partition splits the network: messages between different groups are
	// dropped, including those in flight. Nodes in no group form one more
	// group. Heal removes the partition.
	Partition(groups ...[]node.ID)
	Heal()
	// Handler returns a node's handler for inspection (nil while down).
	Handler(id node.ID) node.Handler
	// StopWhen ends the run after the first event at which cond holds.
	StopWhen(cond func() bool)
	// Stop ends the run now.
	Stop()
}

// System is one distributed program.
type System struct {
	Name    string
	Summary string
	// Codec registers every message and input type the system uses.
	Codec *node.Codec
	// New builds a fresh handler for node id, at first start and at every
	// restart. It must be deterministic given its arguments.
	New func(id node.ID, cfg Config) node.Handler
	// Bugs lists seeded defects; "none" (the correct program) is implied.
	Bugs []Bug
	// Params documents the --param keys the system reads: replay sim
	// --help lists them, and when set, a key not among them is refused
	// before the run (and before Validate). Optional: nil leaves every
	// key to Validate, or unchecked without it.
	Params []Param
	// NodeName names the i-th node (0-based) of a simulated run; default
	// "n1", "n2", ...
	NodeName func(i int) node.ID
	// Sim holds the default simulation settings.
	Sim SimDefaults
	// CryptoRand declares that handler code reads crypto/rand (etcd raft
	// does); drivers then install node.InterceptCryptoRand so those reads
	// are recorded and replayed.
	CryptoRand bool
	// Scenario drives a simulated run (inputs, faults, a stop condition).
	// Random churn, when enabled, runs in addition to it.
	Scenario func(ctl Controller)
	// Validate, if set, rejects a run the system cannot do (too many nodes
	// for its key space, a malformed or unknown parameter) before any node
	// is built, so the user gets one clear error instead of a panic inside
	// a handler or a run that never ends. Optional: nil accepts every run.
	Validate func(cfg Config) error
}

// CheckConfig reports a system that cannot run (no New, no Codec) and
// runs its Validate hook, if it has one; a hook that panics is an error
// naming the system, not a crash.
func (s *System) CheckConfig(cfg Config) (err error) {
	switch {
	case s.New == nil:
		return fmt.Errorf("system %q has no New: it is what builds each node's handler", s.Name)
	case s.Codec == nil:
		return fmt.Errorf("system %q has no Codec: give it node.NewCodec(), with MustRegister for each message type it sends (none, if it sends none)", s.Name)
	}
	if len(s.Params) > 0 {
		known := make([]string, len(s.Params))
		for i, p := range s.Params {
			known[i] = p.Name
		}
		if err := cfg.CheckParams(known...); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	if s.Validate == nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("system %q: its Validate hook panicked: %v", s.Name, p)
		}
	}()
	return s.Validate(cfg)
}

// BugNames lists the valid --bug values: "none" first, then the system's.
func (s *System) BugNames() []string {
	names := []string{"none"}
	for _, b := range s.Bugs {
		names = append(names, b.Name)
	}
	return names
}

// CheckBug returns an error listing the valid names when bug is not one.
func (s *System) CheckBug(bug string) error {
	if slices.Contains(s.BugNames(), bug) {
		return nil
	}
	return fmt.Errorf("system %s has no bug %q (valid: %s)", s.Name, bug, strings.Join(s.BugNames(), ", "))
}

// NodeIDs names the nodes of an n-node simulated run, sorted.
func (s *System) NodeIDs(n int) []node.ID {
	ids := make([]node.ID, n)
	for i := range ids {
		if s.NodeName != nil {
			ids[i] = s.NodeName(i)
		} else {
			ids[i] = node.ID(fmt.Sprintf("n%d", i+1))
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Registry holds the systems a replay binary knows.
type Registry struct {
	systems map[string]*System
}

// NewRegistry returns a registry holding systems.
func NewRegistry(systems ...*System) *Registry {
	r := &Registry{systems: map[string]*System{}}
	for _, s := range systems {
		r.Register(s)
	}
	return r
}

// Register adds a system; a second system with the same name panics, since
// that is a programming error in the binary's main.
func (r *Registry) Register(s *System) {
	if _, dup := r.systems[s.Name]; dup {
		panic(fmt.Sprintf("system %q registered twice", s.Name))
	}
	r.systems[s.Name] = s
}

// Names lists registered systems, sorted.
func (r *Registry) Names() []string {
	return slices.Sorted(maps.Keys(r.systems))
}

// Lookup finds a system by name, with an error listing the known ones.
func (r *Registry) Lookup(name string) (*System, error) {
	if s, ok := r.systems[name]; ok {
		return s, nil
	}
	known := r.Names()
	if len(known) == 0 {
		return nil, fmt.Errorf("unknown system %q: this binary registers no systems", name)
	}
	return nil, fmt.Errorf("unknown system %q (known: %s)", name, strings.Join(known, ", "))
}

// LookupRecorded is Lookup for the system a trace names: its error also
// says which binary replays such a trace.
func (r *Registry) LookupRecorded(name string) (*System, error) {
	s, err := r.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: a trace replays in a binary that registers its system (one built with cli.Main, as in docs/user-guide.md)", err)
	}
	return s, nil
}
