// Package randtree is RandTree, the random overlay tree with bounded fan-out
// that model checkers and predicate checkers of the WiDS/MaceMC line were
// first demonstrated on. The root is the node with the lowest ID. A joiner
// asks any node it knows (its contact); the contact forwards the request to
// its root, which adopts the joiner or passes it down to a random child when
// it already has Fanout children, and so on down the tree; the adopting node
// answers with a JoinReply. The root's children know each other as siblings
// (JoinReply and UpdateSibling carry the list), so they can regroup when the
// root fails. A joiner whose ID is lower than its new root's takes the root
// over: it tells the old root (NewRoot), the old root becomes its child, and
// NewRoot travels down the old tree. Every joined node runs a recovery timer
// that probes its parent, its children and one random peer: silent
// neighbours are dropped, an orphan becomes the root of its subtree, an
// unjoined peer is invited in, and of two trees that meet, the one with the
// higher root joins the other. Resets are silent: a crashed node restarts
// knowing only (from disk) that it belongs to the overlay and asks a random
// peer to place it again; nobody is told, and its old parent and children
// find out by probing.
//
// Node IDs are n1..nN and the ID order is numeric (n2 < n10).
//
// Seeded bugs (--bug):
//
//   - sibling-child: a sibling list received in UpdateSibling or JoinReply
//     is installed without removing the node's own children, so a node
//     can hold the same peer as child and sibling.
//   - root-child: installing a new root does not remove that root from the
//     children list; the node that had adopted the new root keeps it as a
//     child.
//   - stale-siblings: when the root gives up the root to a lower ID, the
//     nodes below it keep their sibling lists although they are no longer
//     the root's children.
//   - no-recovery-timer: a node that starts a tree by itself (joins itself)
//     never schedules its recovery timer, so it never probes.
package randtree

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Start is the external input that makes a node join: Contact is a node
// believed to be in a tree; "" makes the node start a tree of its own.
type Start struct{ Contact node.ID }

// Join asks for Joiner to be placed in a tree. A node that is not the root
// forwards it up to its root; from the root it travels down (Down set,
// Root naming the tree) until a node with a free slot adopts the joiner.
type Join struct {
	Joiner   node.ID
	JoinerID int
	Down     bool
	Root     node.ID
	Hops     int
}

// JoinReply tells a joiner it was adopted by the sender.
type JoinReply struct {
	Root   node.ID
	RootID int
	Depth  int // the new parent's depth
	// Siblings are the parent's other children when the parent is the root.
	Siblings []node.ID
}

// UpdateSibling gives a child of the root its current siblings: the root's
// other children. The root sends it when its children change and at every
// recovery round, so a lost update heals.
type UpdateSibling struct{ Siblings []node.ID }

// NewRoot says Root is the root now. Sent by a joiner with a lower ID to the
// root it takes over, and by every parent to its children when its root
// changed.
type NewRoot struct {
	Root   node.ID
	RootID int
	Depth  int // the sender's depth
}

// Probe is the recovery timer's liveness and consistency check. An unjoined
// receiver joins the prober's tree through Root.
type Probe struct {
	Root   node.ID
	RootID int
}

// ProbeReply answers a Probe with the replier's place in its tree.
type ProbeReply struct {
	Joined  bool
	Root    node.ID
	RootID  int
	Parent  node.ID
	Depth   int
	IsChild bool // the prober is one of the replier's children
}

// Node is one RandTree node. Its exported fields are what predicates read.
type Node struct {
	Self   node.ID
	ID     int // numeric ID: n7 has 7; the root is the lowest
	Joined bool
	IsRoot bool
	Root   node.ID // "" until joined
	RootID int
	Parent node.ID // "" for a root and for an unjoined node
	Depth  int     // hops from the root as last heard from the parent
	// Children and Siblings are sorted. Only children of the root have
	// siblings: the root's other children.
	Children []node.ID
	Siblings []node.ID
	Fanout   int
	// Contact is where the pending join request went ("" when none).
	Contact      node.ID
	JoinAttempts int
	// Missed counts probes in a row a parent or child left unanswered.
	Missed map[node.ID]int

	recoveryTimer node.TimerID
	joinTimer     node.TimerID
	nodes         int    // size of the system: a depth beyond it means a loop
	bug           string `replay:"-"`
}

// Protocol timing and limits.
const (
	DefaultFanout   = 3
	recoveryMin     = 80 * time.Millisecond
	recoveryMax     = 120 * time.Millisecond
	joinRetry       = 150 * time.Millisecond
	missLimit       = 3 // unanswered probes in a row before a neighbour is presumed dead
	maxJoinAttempts = 5 // then start a tree alone; probes merge trees later
)

// Timer names, as predicates see them through timers(node).
const (
	RecoveryTimer = "recovery"
	JoinTimer     = "join"
)

// NumericID is the ID order of RandTree: the number after the node name's
// letters (n10 is 10), or -1 when the name has none.
func NumericID(id node.ID) int {
	s := strings.TrimLeft(string(id), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-")
	v, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return v
}

// New builds a node. The "fanout" parameter bounds the number of children.
func New(id node.ID, cfg system.Config) node.Handler {
	fanout, err := fanoutParam(cfg)
	if err != nil {
		panic(err.Error())
	}
	if NumericID(id) < 0 {
		panic(fmt.Sprintf("randtree: node name %q has no numeric ID (want n1, n2, ...)", id))
	}
	return &Node{Self: id, ID: NumericID(id), Fanout: fanout, nodes: len(cfg.Nodes), bug: cfg.Bug}
}

func fanoutParam(cfg system.Config) (int, error) {
	fanout, err := strconv.Atoi(cfg.Param("fanout", strconv.Itoa(DefaultFanout)))
	if err != nil || fanout < 1 {
		return 0, fmt.Errorf("randtree: --param fanout=%q: want a positive integer", cfg.Param("fanout", ""))
	}
	return fanout, nil
}

// maxResets bounds the "resets" parameter: the scenario schedules every
// reset up front.
const maxResets = 10_000

// validate refuses, before any node is built, parameters New or the
// scenario cannot use (the scenario used to fall back to the default
// number of resets silently).
func validate(cfg system.Config) error {
	if _, err := fanoutParam(cfg); err != nil {
		return err
	}
	if v := cfg.Param("resets", ""); v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 0 || n > maxResets {
			return fmt.Errorf("randtree: --param resets=%q: want an integer in 0..%d", v, maxResets)
		}
	}
	return nil
}

// memberKey marks on disk that the node was told to be in the overlay, as
// a deployment's configuration would: a restarted node joins again.
const memberKey = "member"

// Init implements node.Handler. A node starts (and restarts) outside any
// tree, having forgotten everything else. At first start a Start input or
// a probe from a joined node brings it in; after a reset it asks a random
// peer to place it again.
func (n *Node) Init(env node.Env) {
	n.Missed = map[node.ID]int{}
	if _, member := env.Disk().Get(memberKey); member {
		p, ok := randomOutside(env, []node.ID{n.Self})
		if !ok {
			n.joinSelf(env)
			return
		}
		n.requestJoin(env, p)
	}
}

// Input implements node.Inputter.
func (n *Node) Input(env node.Env, in node.Message) {
	m, ok := in.(Start)
	if !ok || n.Joined || n.Contact != "" {
		return
	}
	env.Disk().Put(memberKey, []byte{1})
	if m.Contact == "" || m.Contact == n.Self {
		n.joinSelf(env)
		return
	}
	n.requestJoin(env, m.Contact)
}

// joinSelf starts a tree with this node alone in it.
func (n *Node) joinSelf(env node.Env) {
	n.stopJoining(env)
	n.Joined, n.IsRoot, n.Parent, n.Depth, n.Siblings = true, true, "", 0, nil
	n.Root, n.RootID = n.Self, n.ID
	env.Log().Info("started a tree of its own")
	if n.bug != "no-recovery-timer" {
		n.ensureRecovery(env)
	}
}

func (n *Node) requestJoin(env node.Env, contact node.ID) {
	n.Contact = contact
	n.JoinAttempts++
	env.Send(contact, Join{Joiner: n.Self, JoinerID: n.ID})
	if n.joinTimer != 0 {
		env.Cancel(n.joinTimer)
	}
	n.joinTimer = env.After(joinRetry, JoinTimer)
}

func (n *Node) stopJoining(env node.Env) {
	if n.joinTimer != 0 {
		env.Cancel(n.joinTimer)
		n.joinTimer = 0
	}
	n.Contact, n.JoinAttempts = "", 0
}

func (n *Node) ensureRecovery(env node.Env) {
	if n.recoveryTimer == 0 {
		d := recoveryMin + time.Duration(env.Rand().Int64N(int64(recoveryMax-recoveryMin)))
		n.recoveryTimer = env.After(d, RecoveryTimer)
	}
}

// Timer implements node.Handler.
func (n *Node) Timer(env node.Env, t node.Timer) {
	switch {
	case t.Name == JoinTimer && t.ID == n.joinTimer:
		n.joinTimer = 0
		if n.Joined {
			return
		}
		if n.JoinAttempts >= maxJoinAttempts {
			n.joinSelf(env)
			return
		}
		p, ok := randomOutside(env, []node.ID{n.Self})
		if !ok {
			n.joinSelf(env)
			return
		}
		n.requestJoin(env, p)
	case t.Name == RecoveryTimer && t.ID == n.recoveryTimer:
		n.recoveryTimer = 0
		n.recover(env)
	}
}

// Receive implements node.Handler.
func (n *Node) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case Join:
		n.onJoin(env, m)
	case JoinReply:
		n.onJoinReply(env, from, m)
	case UpdateSibling:
		n.onUpdateSibling(from, m)
	case NewRoot:
		n.onNewRoot(env, from, m)
	case Probe:
		n.onProbe(env, from, m)
	case ProbeReply:
		n.onProbeReply(env, from, m)
	}
}

// onJoin forwards a join request up to the root, then down to a node with
// a free slot.
func (n *Node) onJoin(env node.Env, m Join) {
	if !n.Joined || m.Joiner == n.Self || m.Hops > 2*n.nodes {
		return // nowhere to place it (the joiner retries), or a loop of stale root pointers
	}
	if !m.Down {
		if !n.IsRoot {
			m.Hops++
			env.Send(n.Root, m)
			return
		}
		m.Down, m.Root = true, n.Self
	}
	if m.Root != n.Root || m.Joiner == n.Parent || m.Joiner == n.Root {
		return // this node left that tree meanwhile, or adopting an ancestor would close a loop
	}
	if slices.Contains(n.Children, m.Joiner) || len(n.Children) < n.Fanout {
		n.adopt(env, m.Joiner)
		return
	}
	m.Hops++
	env.Send(n.Children[env.Rand().IntN(len(n.Children))], m)
}

// adopt makes c a child (again, if it already was one: its reply was lost).
func (n *Node) adopt(env node.Env, c node.ID) {
	n.Children = insertSorted(n.Children, c)
	n.Siblings = without(n.Siblings, c) // a child is not a sibling
	delete(n.Missed, c)
	reply := JoinReply{Root: n.Root, RootID: n.RootID, Depth: n.Depth}
	if n.IsRoot {
		reply.Siblings = without(n.Children, c)
		n.updateSiblings(env, c)
	}
	env.Log().Info("adopted", "child", c)
	env.Send(c, reply)
}

// updateSiblings sends every child of the root except "except" its current
// siblings.
func (n *Node) updateSiblings(env node.Env, except node.ID) {
	for _, c := range n.Children {
		if c != except {
			env.Send(c, UpdateSibling{Siblings: without(n.Children, c)})
		}
	}
}

// learnSiblings installs a sibling list from the root.
func (n *Node) learnSiblings(siblings []node.ID) {
	s := without(siblings, n.Self)
	if n.bug != "sibling-child" {
		// A peer this node believes is its child cannot be its sibling;
		// probes settle which belief is stale.
		s = slices.DeleteFunc(s, func(x node.ID) bool { return slices.Contains(n.Children, x) })
	}
	n.Siblings = s
}

// onJoinReply: the sender adopted this node. A lower ID than the new root's
// takes the root over instead of staying below it.
func (n *Node) onJoinReply(env node.Env, from node.ID, m JoinReply) {
	switch {
	case n.Joined && !n.IsRoot && from != n.Parent:
		return // a second placement from a retried request; that parent drops us after a probe
	case m.Root == n.Self || slices.Contains(n.Children, from):
		return // stale: placed inside its own subtree
	}
	n.stopJoining(env)
	n.Joined = true
	n.ensureRecovery(env)
	if n.ID < m.RootID && len(n.Children) < n.Fanout {
		n.claimRoot(env, m.Root)
		return
	}
	n.IsRoot, n.Parent, n.Depth = false, from, m.Depth+1
	delete(n.Missed, from)
	n.installRoot(env, m.Root, m.RootID)
	if from == m.Root {
		n.learnSiblings(m.Siblings)
	} else {
		n.Siblings = nil
	}
	env.Log().Info("joined", "parent", from, "root", m.Root)
}

// claimRoot makes this node the root with the old root as its child.
func (n *Node) claimRoot(env node.Env, oldRoot node.ID) {
	n.IsRoot, n.Parent, n.Depth, n.Siblings = true, "", 0, nil
	n.Children = insertSorted(n.Children, oldRoot)
	delete(n.Missed, oldRoot)
	env.Log().Info("takes the root over", "old_root", oldRoot)
	env.Send(oldRoot, NewRoot{Root: n.Self, RootID: n.ID})
	if n.Root != n.Self {
		n.Root, n.RootID = n.Self, n.ID
		for _, c := range n.Children {
			if c != oldRoot {
				env.Send(c, NewRoot{Root: n.Self, RootID: n.ID})
			}
		}
	}
	n.updateSiblings(env, "")
}

// installRoot records a new root and tells the children.
func (n *Node) installRoot(env node.Env, root node.ID, rootID int) {
	if root == n.Root && rootID == n.RootID {
		return
	}
	n.Root, n.RootID = root, rootID
	if n.bug != "root-child" {
		// The root is everyone's ancestor. The node that adopted a
		// joiner which then took the root over still lists it.
		n.Children = without(n.Children, root)
	}
	if n.Parent != root && n.bug != "stale-siblings" {
		// Siblings are the root's other children; below the root's
		// children there are none. This is how the old root's children
		// forget theirs when the root is given up.
		n.Siblings = nil
	}
	for _, c := range n.Children {
		env.Send(c, NewRoot{Root: root, RootID: rootID, Depth: n.Depth})
	}
}

// onNewRoot: either the parent passes a root change down, or a lower ID this
// root adopted claims the root.
func (n *Node) onNewRoot(env node.Env, from node.ID, m NewRoot) {
	switch {
	case !n.Joined || m.Root == n.Self:
		return
	case !n.IsRoot && from == n.Parent:
		n.Depth = m.Depth + 1
		n.installRoot(env, m.Root, m.RootID)
	case n.IsRoot && from == m.Root && m.RootID < n.ID:
		env.Log().Info("gives the root up", "new_root", from)
		n.IsRoot, n.Parent, n.Depth = false, from, 1
		delete(n.Missed, from)
		n.installRoot(env, m.Root, m.RootID)
	}
}

// onUpdateSibling accepts a sibling list only from the root, as its child.
func (n *Node) onUpdateSibling(from node.ID, m UpdateSibling) {
	if n.Joined && !n.IsRoot && from == n.Parent && n.Parent == n.Root {
		n.learnSiblings(m.Siblings)
	}
}

// recover is one recovery round: presume dead the parent or children that
// left missLimit probes in a row unanswered, then probe again.
func (n *Node) recover(env node.Env) {
	if !n.Joined {
		return
	}
	for _, c := range slices.Clone(n.Children) {
		if n.Missed[c] >= missLimit {
			env.Log().Info("child silent", "child", c)
			n.dropChild(env, c)
		}
	}
	if n.Parent != "" && n.Missed[n.Parent] >= missLimit {
		env.Log().Info("parent silent", "parent", n.Parent)
		n.orphan(env)
	}
	neighbours := slices.Clone(n.Children)
	if n.Parent != "" {
		neighbours = append(neighbours, n.Parent)
	}
	for _, x := range neighbours {
		n.Missed[x]++
		env.Send(x, Probe{Root: n.Root, RootID: n.RootID})
	}
	for _, x := range sortedKeys(n.Missed) {
		if !slices.Contains(neighbours, x) {
			delete(n.Missed, x)
		}
	}
	// One random peer: finds reset nodes and other trees.
	if p, ok := randomOutside(env, append(neighbours, n.Self)); ok {
		env.Send(p, Probe{Root: n.Root, RootID: n.RootID})
	}
	if n.IsRoot {
		n.updateSiblings(env, "")
	}
	n.ensureRecovery(env)
}

func (n *Node) dropChild(env node.Env, c node.ID) {
	n.Children = without(n.Children, c)
	delete(n.Missed, c)
	if n.IsRoot {
		n.updateSiblings(env, "")
	}
}

// orphan: the parent is gone or disowned this node, which becomes the root
// of its subtree. A former child of the root asks its lowest sibling (if
// lower) to take the subtree in; otherwise probes merge the trees later.
func (n *Node) orphan(env node.Env) {
	var lowest node.ID
	for _, s := range n.Siblings {
		if NumericID(s) < n.ID && (lowest == "" || NumericID(s) < NumericID(lowest)) {
			lowest = s
		}
	}
	delete(n.Missed, n.Parent)
	n.IsRoot, n.Parent, n.Depth, n.Siblings = true, "", 0, nil
	n.installRoot(env, n.Self, n.ID)
	if lowest != "" {
		env.Send(lowest, Join{Joiner: n.Self, JoinerID: n.ID})
	}
}

// merge: of two trees that meet, the one with the higher root joins the
// other, root first.
func (n *Node) merge(env node.Env, root node.ID, rootID int) {
	if n.IsRoot && root != "" && root != n.Self && rootID < n.ID {
		env.Send(root, Join{Joiner: n.Self, JoinerID: n.ID})
	}
}

func (n *Node) onProbe(env node.Env, from node.ID, m Probe) {
	if !n.Joined {
		env.Send(from, ProbeReply{})
		if n.Contact == "" && m.Root != "" {
			n.requestJoin(env, m.Root)
		}
		return
	}
	env.Send(from, ProbeReply{Joined: true, Root: n.Root, RootID: n.RootID, Parent: n.Parent, Depth: n.Depth,
		IsChild: slices.Contains(n.Children, from)})
	n.merge(env, m.Root, m.RootID)
}

func (n *Node) onProbeReply(env node.Env, from node.ID, m ProbeReply) {
	if !n.Joined {
		return
	}
	if slices.Contains(n.Children, from) {
		n.Missed[from] = 0
		if !m.Joined || m.Parent != n.Self {
			env.Log().Info("child left", "child", from)
			n.dropChild(env, from)
		}
	}
	if from == n.Parent {
		n.Missed[from] = 0
		switch {
		case !m.Joined || !m.IsChild:
			env.Log().Info("disowned by parent", "parent", from)
			n.orphan(env)
		case m.Root == n.Self || m.Depth+1 > n.nodes:
			env.Log().Info("parent chain loops", "parent", from)
			n.orphan(env)
		default:
			n.Depth = m.Depth + 1
			n.installRoot(env, m.Root, m.RootID)
		}
	}
	if m.Joined {
		n.merge(env, m.Root, m.RootID)
	}
}

func insertSorted(xs []node.ID, x node.ID) []node.ID {
	i, found := slices.BinarySearch(xs, x)
	if found {
		return xs
	}
	return slices.Insert(slices.Clone(xs), i, x)
}

// without returns a copy of xs without x (nil when empty).
func without(xs []node.ID, x node.ID) []node.ID {
	var out []node.ID
	for _, y := range xs {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

func sortedKeys(m map[node.ID]int) []node.ID {
	keys := make([]node.ID, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// System describes RandTree to the drivers.
var System = &system.System{
	Name:    "randtree",
	Summary: "random overlay tree with bounded fan-out: root = lowest ID, joins placed from the root down, probe-based recovery",
	Codec:   node.NewCodec().MustRegister(Start{}, Join{}, JoinReply{}, UpdateSibling{}, NewRoot{}, Probe{}, ProbeReply{}),
	New:     New,
	Bugs: []system.Bug{
		{Name: "sibling-child", Summary: "UpdateSibling/JoinReply install siblings without removing the node's children (children and siblings overlap)"},
		{Name: "root-child", Summary: "installing a new root does not remove it from the children list"},
		{Name: "stale-siblings", Summary: "when the root is given up, the nodes below keep their sibling lists"},
		{Name: "no-recovery-timer", Summary: "a node that starts a tree by itself schedules no recovery timer"},
	},
	Sim: system.SimDefaults{
		Nodes: 12,
		Drop:  0.02,
		Time:  4 * time.Second,
	},
	Scenario: scenario,
	Params: []system.Param{
		{Name: "fanout", Default: strconv.Itoa(DefaultFanout), Summary: "children per tree node"},
		{Name: "resets", Default: strconv.Itoa(DefaultResets), Summary: fmt.Sprintf("resets the scenario makes (0..%d)", maxResets)},
	},
	Validate: validate,
}

// Scenario timing: joins spread over the first joinWindow in random order
// (so lower IDs often join after higher ones and take the root over), then
// "resets" (default 6) crash-and-restart random nodes between resetFrom
// and resetTo, leaving the rest of the run for the tree to settle.
const (
	joinWindow   = 200 * time.Millisecond
	resetFrom    = 600 * time.Millisecond
	resetTo      = 2500 * time.Millisecond
	resetDownMin = 50 * time.Millisecond
	resetDownMax = 400 * time.Millisecond
	// DefaultResets is the number of scenario resets ("resets" parameter).
	DefaultResets = 6
)

func scenario(ctl system.Controller) {
	r := ctl.Rand()
	ids := ctl.Nodes()
	resets, err := strconv.Atoi(ctl.Config().Param("resets", strconv.Itoa(DefaultResets)))
	if err != nil || resets < 0 {
		resets = DefaultResets
	}
	times := make([]time.Duration, len(ids))
	for i := range times {
		times[i] = time.Duration(r.Int64N(int64(joinWindow)))
	}
	slices.Sort(times)
	for k, i := range r.Perm(len(ids)) {
		id, first := ids[i], k == 0
		ctl.At(times[k], func() {
			// The first node starts the tree; later ones are given a
			// random node already in a tree as their contact.
			var contact node.ID
			if !first {
				var in []node.ID
				for _, x := range ctl.Nodes() {
					if h, ok := ctl.Handler(x).(*Node); ok && h.Joined {
						in = append(in, x)
					}
				}
				if len(in) > 0 {
					contact = in[r.IntN(len(in))]
				}
			}
			ctl.Input(id, Start{Contact: contact})
		})
	}
	for range resets {
		at := resetFrom + time.Duration(r.Int64N(int64(resetTo-resetFrom)))
		down := resetDownMin + time.Duration(r.Int64N(int64(resetDownMax-resetDownMin)))
		id := ids[r.IntN(len(ids))]
		ctl.At(at, func() { ctl.Crash(id) })
		ctl.At(at+down, func() { ctl.Restart(id) })
	}
}

// randomOutside picks a node of the run uniformly among those not in
// excluded (with one draw of env.Rand), in O(len(excluded) log nodes): the
// node set is shared, not copied (node.MembersOf), so a probe costs the
// same in a tree of 10 nodes as in one of 10,000.
func randomOutside(env node.Env, excluded []node.ID) (node.ID, bool) {
	members := node.MembersOf(env)
	var skip []int
	for _, id := range excluded {
		if i, ok := members.Index(id); ok && !slices.Contains(skip, i) {
			skip = append(skip, i)
		}
	}
	count := members.Len() - len(skip)
	if count <= 0 {
		return "", false
	}
	slices.Sort(skip)
	// The k-th member (in order) that is not skipped.
	k := env.Rand().IntN(count)
	for _, i := range skip {
		if i > k {
			break
		}
		k++
	}
	return members.At(k), true
}
