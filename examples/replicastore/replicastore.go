// Package replicastore is a BitVault-style replicated object store, the
// replicated-store case study of the WiDS Checker paper.
//
// Object IDs and node IDs are hashed onto a ring; the owner of an object is
// the first node at or after the object's position among the nodes a node
// believes up. Replicas live on the holders' disks and survive crashes. The
// owner keeps, in memory only, the index of the object's replica locations.
// Holders publish what they hold to the owner with stamped, acknowledged
// reports, and republish when the owner changes: when their failure
// detector (heartbeats with a timeout) changes their view of the ring, when
// a restarted owner announces a new incarnation, or when an owner that had
// declared them dead asks them to (Sync). A restarted node republishes
// everything on its disk.
//
// Owners repair: an object whose degree (replicas in the index) falls below
// the target because a holder failed, or that was just created, is copied
// to the least loaded node until it reaches the target. A periodic
// remove-extra-replicas routine deletes surplus replicas, newest first (a
// surplus usually comes from a node returning after its replicas were
// repaired elsewhere). A load balancer on every node moves replicas from
// heavily to lightly loaded nodes: copy to the destination, which publishes
// the new replica naming the move's source, then delete at the source.
//
// Seeded bugs (--bug):
//
//   - balance-race: remove-extra-replicas ignores moves in flight. Between
//     the destination's publish and the source's delete the index holds one
//     replica too many; the routine deletes the newest, which is the copy
//     the move relies on, and the source then deletes its own: the degree
//     drops below the target and, since both removals were planned by the
//     owner, nothing schedules a repair.
//   - transient-failure: only up/down transitions of the failure detector
//     count as membership changes. A node that crashes and restarts faster
//     than the detection timeout has lost its in-memory index, yet nobody
//     republishes to it: the other holders of its objects become orphans,
//     and a later failure of one of them is never repaired.
package replicastore

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// DefaultTarget is the replica degree owners maintain (param "target").
const DefaultTarget = 3

// Timing. Detection takes failAfter; a node that restarts faster than that
// is never seen down. grace lets republished reports arrive before an owner
// acts on a changed view; it exceeds moveTimeout so that every move in
// flight at a view change has completed or aborted before the new owner
// counts replicas.
const (
	heartbeatEvery = 100 * time.Millisecond
	failAfter      = 400 * time.Millisecond
	grace          = 600 * time.Millisecond
	maintainEvery  = 200 * time.Millisecond
	retryEvery     = 150 * time.Millisecond
	balanceEvery   = 500 * time.Millisecond
	moveTimeout    = 500 * time.Millisecond
	repairTimeout  = 300 * time.Millisecond
)

// Create is the external input: a client stores a new object through this
// node, which keeps the first replica.
type Create struct {
	Object string
	Data   string
}

// Heartbeat tells a peer this node is up, which incarnation it is and how
// many replicas it holds (the load balancer's input).
type Heartbeat struct {
	Incarnation uint64
	Load        int
}

// Stamp orders the reports of one holder: the holder's incarnation (on
// disk, bumped at every start) and a counter within it.
type Stamp struct {
	Inc uint64
	Seq uint64
}

// Before reports whether s was issued before t.
func (s Stamp) Before(t Stamp) bool {
	return s.Inc < t.Inc || s.Inc == t.Inc && s.Seq < t.Seq
}

// IsZero reports whether s is the zero stamp (no move, no report).
func (s Stamp) IsZero() bool { return s == Stamp{} }

// Report tells an object's owner whether the sender holds a replica. A
// report for a replica received by a move names the move's source, which
// will delete its own replica once the owner has acknowledged this one.
type Report struct {
	Object    string
	Holds     bool
	Stamp     Stamp
	MovedFrom node.ID
	Move      Stamp
}

// ReportAck acknowledges a report; Accepted is false when the receiver
// does not consider itself the object's owner, and the holder retries.
// Incarnation is the owner's: a holder that restarted and has not heard a
// heartbeat yet must still notice when this incarnation is replaced.
type ReportAck struct {
	Object      string
	Stamp       Stamp
	Accepted    bool
	Incarnation uint64
}

// CopyTo asks a holder to copy its replica to Dest (a repair).
type CopyTo struct {
	Object string
	Dest   node.ID
}

// Replicate carries a replica's data to a new holder. Move is zero for a
// repair and the move's ID for a move.
type Replicate struct {
	Object string
	Data   string
	Move   Stamp
}

// CopyDone tells a move's source that the destination's replica is
// indexed, so the source may delete its own.
type CopyDone struct {
	Object string
	Move   Stamp
}

// Refuse tells a move's source that the destination already holds the
// object.
type Refuse struct {
	Object string
	Move   Stamp
}

// Delete asks a holder to delete a surplus replica. Stamp is the holder's
// latest report the owner applied: a holder whose replica changed since
// ignores it.
type Delete struct {
	Object string
	Stamp  Stamp
}

// Sync asks a holder to republish the replicas whose owner is the sender:
// the sender had declared it dead and removed it from its index. The
// sender repeats it until SyncDone.
type Sync struct{}

// SyncDone answers Sync once the republished reports are queued.
type SyncDone struct{}

// Peer is what the failure detector knows of another node.
type Peer struct {
	Up          bool
	LastHeard   int64 // Unix ns
	Incarnation uint64
	Load        int
}

// Repair is a copy an owner ordered to restore an object's degree.
type Repair struct {
	Dest  node.ID
	Until int64 // Unix ns; after it the owner tries again
}

// Move is the load balancer's move in progress at its source.
type Move struct {
	ID     Stamp
	Object string
	Dest   node.ID
	Until  int64 // Unix ns; after it the source aborts and keeps its replica
}

// Node is one storage node: holder, owner and load balancer.
type Node struct {
	Self        node.ID
	Incarnation uint64
	Target      int

	// Holder role. Stored mirrors the replicas on this node's disk.
	Stored map[string]bool
	// Reported is the stamp of this node's latest report per object.
	Reported map[string]Stamp
	// Outbox holds reports not yet accepted by the object's owner. A
	// report that the replica is gone stays on disk (a tombstone) until
	// accepted, so a crash cannot leave the owner's index pointing here.
	Outbox map[string]Report
	// Arrived is the move each replica received by a move arrived with,
	// so a retransmitted Replicate is answered rather than refused.
	Arrived map[string]Stamp
	Move    *Move

	// Owner role, in memory only: lost at a crash.
	// Index lists, per owned object, the nodes known to hold a replica,
	// oldest publication first.
	Index map[string][]node.ID
	// Deleting lists surplus holders asked to delete their replica.
	Deleting map[string][]node.ID
	// Leaving names the source of a move whose destination is indexed:
	// it will delete its replica.
	Leaving map[string]node.ID
	// Repairing is the copy in flight per object.
	Repairing map[string]Repair
	// CheckDegree marks objects that may be below the target: new, or a
	// holder failed or left unexpectedly.
	CheckDegree map[string]bool
	// Stamps is the latest report applied per object and holder, so a
	// delayed report never undoes a newer one.
	Stamps map[string]map[node.ID]Stamp
	// Syncing lists readmitted peers asked to republish, until they answer.
	Syncing map[node.ID]bool

	// Failure detector and ring view.
	Peers       map[node.ID]*Peer
	View        []node.ID // nodes believed up, self included, sorted
	ViewChanged int64     // Unix ns

	seq  uint64
	bug  string
	ring map[node.ID]uint64 `replay:"-"` // positions of the nodes, fixed
}

// New builds a node.
func New(id node.ID, cfg system.Config) node.Handler {
	target, err := targetParam(cfg)
	if err != nil {
		panic(err.Error())
	}
	n := &Node{
		Self: id, Target: target, bug: cfg.Bug,
		Stored: map[string]bool{}, Reported: map[string]Stamp{}, Outbox: map[string]Report{}, Arrived: map[string]Stamp{},
		Index: map[string][]node.ID{}, Deleting: map[string][]node.ID{}, Leaving: map[string]node.ID{},
		Repairing: map[string]Repair{}, CheckDegree: map[string]bool{}, Stamps: map[string]map[node.ID]Stamp{},
		Syncing: map[node.ID]bool{},
		Peers:   map[node.ID]*Peer{}, ring: map[node.ID]uint64{},
	}
	for _, m := range cfg.Nodes {
		n.ring[m] = position("node/" + string(m))
	}
	return n
}

// position hashes a name onto the ring. (FNV would put "n1".."n8" in one
// narrow arc: names differing in their last byte barely differ in the high
// bits.)
func position(name string) uint64 { return xxhash.Sum64String(name) }

// OwnerOf returns the owner of object among view: the first node at or
// after the object's position, wrapping around.
func (n *Node) OwnerOf(object string, view []node.ID) node.ID {
	p := position("object/" + object)
	var best, first node.ID
	for _, m := range view {
		q := n.ring[m]
		if first == "" || q < n.ring[first] || q == n.ring[first] && m < first {
			first = m
		}
		if q >= p && (best == "" || q < n.ring[best] || q == n.ring[best] && m < best) {
			best = m
		}
	}
	if best == "" {
		return first
	}
	return best
}

// Disk layout: the incarnation counter, the catalog of stored objects,
// one key per replica's data, and the tombstones.
const (
	keyIncarnation = "incarnation"
	keyCatalog     = "catalog"
	keyTombstones  = "tombstones"
	keyObject      = "object/"
)

// Init implements node.Handler: bump the incarnation, reload the replicas
// from disk and republish them (and any unacknowledged deletion), and start
// optimistic: every peer is assumed up until it misses heartbeats.
func (n *Node) Init(env node.Env) {
	now := env.Now().UnixNano()
	var inc uint64
	n.get(env, keyIncarnation, &inc)
	n.Incarnation = inc + 1
	n.put(env, keyIncarnation, n.Incarnation)

	var catalog, tombstones []string
	n.get(env, keyCatalog, &catalog)
	n.get(env, keyTombstones, &tombstones)
	for _, o := range env.Peers() {
		n.Peers[o] = &Peer{Up: true, LastHeard: now}
	}
	n.View = n.upView()
	n.ViewChanged = now
	for _, o := range catalog {
		n.Stored[o] = true
		n.report(env, o, true, "", Stamp{})
	}
	for _, o := range tombstones {
		if !n.Stored[o] {
			n.report(env, o, false, "", Stamp{})
		}
	}
	n.broadcastHeartbeat(env)
	jitter := func(d time.Duration) time.Duration { return d + time.Duration(env.Rand().Int64N(int64(d))) }
	env.After(jitter(heartbeatEvery)/2, "heartbeat")
	env.After(jitter(maintainEvery), "maintain")
	env.After(retryEvery, "retry")
	env.After(jitter(balanceEvery), "balance")
}

func (n *Node) get(env node.Env, key string, v any) {
	if b, ok := env.Disk().Get(key); ok {
		if err := node.Unmarshal(b, v); err != nil {
			panic(fmt.Sprintf("replicastore: corrupt %q on disk: %v", key, err))
		}
	}
}

func (n *Node) put(env node.Env, key string, v any) {
	b, err := node.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("replicastore: encode %q: %v", key, err))
	}
	env.Disk().Put(key, b)
}

func (n *Node) upView() []node.ID {
	view := []node.ID{n.Self}
	for id, p := range n.Peers {
		if p.Up {
			view = append(view, id)
		}
	}
	slices.Sort(view)
	return view
}

// Input implements node.Inputter: a client creates an object here.
func (n *Node) Input(env node.Env, in node.Message) {
	c, ok := in.(Create)
	if !ok || n.Stored[c.Object] {
		return
	}
	env.Log().Info("client creates object", "object", c.Object)
	n.store(env, c.Object, c.Data, "", Stamp{})
}

// store writes a replica to disk and publishes it.
func (n *Node) store(env node.Env, object, data string, movedFrom node.ID, move Stamp) {
	env.Disk().Put(keyObject+object, []byte(data))
	n.Stored[object] = true
	n.saveCatalog(env)
	n.report(env, object, true, movedFrom, move)
}

// drop deletes a replica from disk; the caller reports it.
func (n *Node) drop(env node.Env, object string) {
	env.Disk().Delete(keyObject + object)
	delete(n.Stored, object)
	delete(n.Arrived, object)
	n.saveCatalog(env)
}

func (n *Node) saveCatalog(env node.Env) {
	n.put(env, keyCatalog, sortedKeys(n.Stored))
}

func (n *Node) saveTombstones(env node.Env) {
	var t []string
	for _, o := range sortedKeys(n.Outbox) {
		if !n.Outbox[o].Holds {
			t = append(t, o)
		}
	}
	n.put(env, keyTombstones, t)
}

// report queues a stamped report for object's owner and sends it.
func (n *Node) report(env node.Env, object string, holds bool, movedFrom node.ID, move Stamp) {
	n.seq++
	r := Report{Object: object, Holds: holds, Stamp: Stamp{Inc: n.Incarnation, Seq: n.seq}, MovedFrom: movedFrom, Move: move}
	old, had := n.Outbox[object]
	n.Reported[object] = r.Stamp
	n.Outbox[object] = r
	if !holds || had && !old.Holds {
		n.saveTombstones(env)
	}
	env.Send(n.OwnerOf(object, n.View), r)
}

// Timer implements node.Handler.
func (n *Node) Timer(env node.Env, t node.Timer) {
	now := env.Now().UnixNano()
	switch t.Name {
	case "heartbeat":
		n.broadcastHeartbeat(env)
		n.detectFailures(env, now)
		for _, id := range sortedKeys(n.Syncing) {
			env.Send(id, Sync{})
		}
		env.After(heartbeatEvery, "heartbeat")
	case "maintain":
		if time.Duration(now-n.ViewChanged) >= grace {
			for _, o := range sortedKeys(n.Index) {
				n.maintain(env, now, o)
			}
		}
		env.After(maintainEvery, "maintain")
	case "retry":
		for _, o := range sortedKeys(n.Outbox) {
			env.Send(n.OwnerOf(o, n.View), n.Outbox[o])
		}
		if m := n.Move; m != nil && n.Stored[m.Object] {
			env.Send(m.Dest, Replicate{Object: m.Object, Data: n.data(env, m.Object), Move: m.ID})
		}
		env.After(retryEvery, "retry")
	case "balance":
		n.balance(env, now)
		env.After(balanceEvery/2+time.Duration(env.Rand().Int64N(int64(balanceEvery))), "balance")
	}
}

func (n *Node) broadcastHeartbeat(env node.Env) {
	hb := Heartbeat{Incarnation: n.Incarnation, Load: len(n.Stored)}
	for _, p := range env.Peers() {
		env.Send(p, hb)
	}
}

func (n *Node) detectFailures(env node.Env, now int64) {
	changed := false
	for _, id := range sortedKeys(n.Peers) {
		p := n.Peers[id]
		if p.Up && time.Duration(now-p.LastHeard) > failAfter {
			p.Up = false
			delete(n.Syncing, id)
			changed = true
			env.Log().Info("peer declared down", "peer", id)
		}
	}
	if changed {
		n.viewChange(env, now)
	}
}

// Receive implements node.Handler.
func (n *Node) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case Heartbeat:
		n.onHeartbeat(env, from, m)
	case Report:
		n.onReport(env, from, m)
	case ReportAck:
		n.onReportAck(env, from, m)
	case CopyTo:
		if n.Stored[m.Object] {
			env.Send(m.Dest, Replicate{Object: m.Object, Data: n.data(env, m.Object)})
		}
	case Replicate:
		n.onReplicate(env, from, m)
	case CopyDone:
		if n.Move != nil && n.Move.ID == m.Move && n.Move.Object == m.Object {
			n.Move = nil
			if n.Stored[m.Object] {
				env.Log().Info("move done, deleting source replica", "object", m.Object, "dest", from)
				n.drop(env, m.Object)
				n.report(env, m.Object, false, "", Stamp{})
			}
		}
	case Refuse:
		if n.Move != nil && n.Move.ID == m.Move {
			n.Move = nil
		}
	case Delete:
		if n.Stored[m.Object] && n.Reported[m.Object] == m.Stamp {
			env.Log().Info("owner deletes surplus replica", "object", m.Object)
			if n.Move != nil && n.Move.Object == m.Object {
				n.Move = nil
			}
			n.drop(env, m.Object)
			n.report(env, m.Object, false, "", Stamp{})
		}
	case Sync:
		n.republishOwnedBy(env, from)
		env.Send(from, SyncDone{})
	case SyncDone:
		delete(n.Syncing, from)
	}
}

func (n *Node) data(env node.Env, object string) string {
	b, ok := env.Disk().Get(keyObject + object)
	if !ok {
		panic(fmt.Sprintf("replicastore: replica %q in catalog but not on disk", object))
	}
	return string(b)
}

func (n *Node) onHeartbeat(env node.Env, from node.ID, hb Heartbeat) {
	p := n.Peers[from]
	if hb.Incarnation < p.Incarnation {
		return // from an incarnation that has since restarted
	}
	now := env.Now().UnixNano()
	p.LastHeard, p.Load = now, hb.Load
	if !p.Up {
		p.Incarnation = hb.Incarnation
		p.Up = true
		env.Log().Info("peer back up", "peer", from)
		n.viewChange(env, now)
		// Its replicas were dropped from this node's index.
		n.Syncing[from] = true
		env.Send(from, Sync{})
		return
	}
	n.noteIncarnation(env, from, hb.Incarnation)
}

// noteIncarnation records a peer's incarnation, learnt from a heartbeat or
// an acknowledgement. A higher one than known means the peer restarted.
func (n *Node) noteIncarnation(env node.Env, from node.ID, inc uint64) {
	p := n.Peers[from]
	if inc <= p.Incarnation {
		return
	}
	restarted := p.Incarnation != 0
	p.Incarnation = inc
	if restarted && n.bug != "transient-failure" {
		// It restarted before anyone declared it down: its view is
		// unchanged but its index is gone.
		env.Log().Info("peer restarted", "peer", from, "incarnation", inc)
		n.republishOwnedBy(env, from)
	}
}

// republishOwnedBy republishes every replica whose owner is owner.
func (n *Node) republishOwnedBy(env node.Env, owner node.ID) {
	for _, o := range sortedKeys(n.Stored) {
		if n.OwnerOf(o, n.View) == owner {
			n.report(env, o, true, "", Stamp{})
		}
	}
}

// viewChange applies a new set of up nodes: as an owner, drop what moved
// away and forget holders now down; as a holder, republish replicas whose
// owner changed.
func (n *Node) viewChange(env node.Env, now int64) {
	old := n.View
	n.View = n.upView()
	n.ViewChanged = now
	up := func(id node.ID) bool { return slices.Contains(n.View, id) }
	for _, o := range sortedKeys(n.Index) {
		if n.OwnerOf(o, n.View) != n.Self {
			n.forget(o)
			continue
		}
		holders := n.Index[o]
		kept := slices.DeleteFunc(slices.Clone(holders), func(h node.ID) bool { return !up(h) })
		if len(kept) != len(holders) {
			n.Index[o] = kept
			n.CheckDegree[o] = true
		}
		n.Deleting[o] = slices.DeleteFunc(n.Deleting[o], func(h node.ID) bool { return !up(h) })
		if len(n.Deleting[o]) == 0 {
			delete(n.Deleting, o)
		}
		if l, ok := n.Leaving[o]; ok && !up(l) {
			delete(n.Leaving, o)
		}
		if r, ok := n.Repairing[o]; ok && !up(r.Dest) {
			delete(n.Repairing, o)
		}
		if len(kept) == 0 {
			n.forget(o)
		}
	}
	for _, o := range sortedKeys(n.Stored) {
		if n.OwnerOf(o, old) != n.OwnerOf(o, n.View) {
			n.report(env, o, true, "", Stamp{})
		}
	}
	for _, o := range sortedKeys(n.Outbox) {
		if r := n.Outbox[o]; !r.Holds && n.OwnerOf(o, old) != n.OwnerOf(o, n.View) {
			env.Send(n.OwnerOf(o, n.View), r)
		}
	}
}

// forget drops an object from the owner's index (its stamps are kept).
func (n *Node) forget(o string) {
	delete(n.Index, o)
	delete(n.Deleting, o)
	delete(n.Leaving, o)
	delete(n.Repairing, o)
	delete(n.CheckDegree, o)
}

func (n *Node) onReport(env node.Env, from node.ID, r Report) {
	o := r.Object
	if n.OwnerOf(o, n.View) != n.Self {
		env.Send(from, ReportAck{Object: o, Stamp: r.Stamp, Accepted: false, Incarnation: n.Incarnation})
		return
	}
	env.Send(from, ReportAck{Object: o, Stamp: r.Stamp, Accepted: true, Incarnation: n.Incarnation})
	stamps := n.Stamps[o]
	if stamps == nil {
		stamps = map[node.ID]Stamp{}
		n.Stamps[o] = stamps
	}
	if !stamps[from].Before(r.Stamp) {
		return // a duplicate or a report overtaken by a newer one
	}
	stamps[from] = r.Stamp
	holders := n.Index[o]
	if r.Holds {
		if len(holders) == 0 {
			n.CheckDegree[o] = true
		}
		if !slices.Contains(holders, from) {
			n.Index[o] = append(holders, from)
		}
		if n.Leaving[o] == from {
			delete(n.Leaving, o) // the source aborted its move
		}
		// A newer report voids a pending delete: it may announce a new
		// replica (the holder deleted, then received a copy, and the
		// report of the deletion was superseded). Remove-extra-replicas
		// decides again on fresh information.
		n.Deleting[o] = slices.DeleteFunc(n.Deleting[o], func(h node.ID) bool { return h == from })
		if len(n.Deleting[o]) == 0 {
			delete(n.Deleting, o)
		}
		if n.Repairing[o].Dest == from {
			delete(n.Repairing, o)
		}
		if r.MovedFrom != "" && slices.Contains(n.Index[o], r.MovedFrom) {
			n.Leaving[o] = r.MovedFrom
		}
		return
	}
	if !slices.Contains(holders, from) {
		return
	}
	n.Index[o] = slices.DeleteFunc(slices.Clone(holders), func(h node.ID) bool { return h == from })
	planned := slices.Contains(n.Deleting[o], from) || n.Leaving[o] == from
	n.Deleting[o] = slices.DeleteFunc(n.Deleting[o], func(h node.ID) bool { return h == from })
	if len(n.Deleting[o]) == 0 {
		delete(n.Deleting, o)
	}
	if n.Leaving[o] == from {
		delete(n.Leaving, o)
	}
	if !planned {
		// A removal this owner did not plan: the degree may be short.
		n.CheckDegree[o] = true
	}
	if len(n.Index[o]) == 0 {
		n.forget(o)
	}
}

func (n *Node) onReportAck(env node.Env, from node.ID, a ReportAck) {
	if from != n.Self {
		n.noteIncarnation(env, from, a.Incarnation)
	}
	r, ok := n.Outbox[a.Object]
	if !ok || r.Stamp != a.Stamp || !a.Accepted {
		return
	}
	delete(n.Outbox, a.Object)
	if !r.Holds {
		n.saveTombstones(env)
	}
	if r.Holds && !r.Move.IsZero() {
		env.Send(r.MovedFrom, CopyDone{Object: a.Object, Move: r.Move})
	}
}

func (n *Node) onReplicate(env node.Env, from node.ID, m Replicate) {
	if n.Stored[m.Object] {
		switch {
		case !m.Move.IsZero() && n.Arrived[m.Object] == m.Move:
			// A retransmission: answer once the owner has the report.
			if _, pending := n.Outbox[m.Object]; !pending {
				env.Send(from, CopyDone{Object: m.Object, Move: m.Move})
			}
		case !m.Move.IsZero():
			env.Send(from, Refuse{Object: m.Object, Move: m.Move})
		default:
			// The owner repairs onto a node it does not know holds the
			// object: tell it.
			n.report(env, m.Object, true, "", Stamp{})
		}
		return
	}
	var movedFrom node.ID
	if !m.Move.IsZero() {
		movedFrom = from
		n.Arrived[m.Object] = m.Move
	}
	n.store(env, m.Object, m.Data, movedFrom, m.Move)
}

// maintain runs the owner's upkeep of one object: resend pending deletes,
// repair a short degree, remove extra replicas.
func (n *Node) maintain(env node.Env, now int64, o string) {
	holders := n.Index[o]
	if r, ok := n.Repairing[o]; ok && now > r.Until {
		delete(n.Repairing, o)
		n.CheckDegree[o] = true
	}
	deleting := n.Deleting[o]
	for _, h := range deleting {
		env.Send(h, Delete{Object: o, Stamp: n.Stamps[o][h]})
	}
	leaving, moving := n.Leaving[o]
	live := slices.DeleteFunc(slices.Clone(holders), func(h node.ID) bool {
		return slices.Contains(deleting, h) || moving && h == leaving
	})
	if n.CheckDegree[o] {
		if len(live) >= n.Target {
			delete(n.CheckDegree, o)
		} else if _, busy := n.Repairing[o]; !busy {
			n.repair(env, now, o, live)
		}
	}
	if _, busy := n.Repairing[o]; busy {
		return
	}
	n.removeExtraReplicas(env, o, holders, deleting, leaving, moving)
}

// removeExtraReplicas deletes the newest replicas beyond the target. The
// source of a move in flight is about to delete its own replica, so it
// does not count.
func (n *Node) removeExtraReplicas(env node.Env, o string, holders, deleting []node.ID, leaving node.ID, moving bool) {
	counted := func(h node.ID) bool {
		if slices.Contains(deleting, h) {
			return false
		}
		return n.bug == "balance-race" || !moving || h != leaving
	}
	surplus := -n.Target
	for _, h := range holders {
		if counted(h) {
			surplus++
		}
	}
	for i := len(holders) - 1; i >= 0 && surplus > 0; i-- {
		h := holders[i]
		if !counted(h) {
			continue
		}
		env.Log().Info("remove extra replica", "object", o, "holder", h)
		n.Deleting[o] = append(n.Deleting[o], h)
		env.Send(h, Delete{Object: o, Stamp: n.Stamps[o][h]})
		surplus--
	}
}

// repair orders one copy of o to the least loaded up node without one.
func (n *Node) repair(env node.Env, now int64, o string, live []node.ID) {
	var source node.ID
	for _, h := range live {
		if slices.Contains(n.View, h) {
			source = h
			break
		}
	}
	dest := n.leastLoaded(func(id node.ID) bool { return !slices.Contains(n.Index[o], id) })
	if source == "" || dest == "" {
		return
	}
	env.Log().Info("repair", "object", o, "from", source, "to", dest, "degree", len(live))
	n.Repairing[o] = Repair{Dest: dest, Until: now + int64(repairTimeout)}
	if source == n.Self {
		env.Send(dest, Replicate{Object: o, Data: n.data(env, o)})
	} else {
		env.Send(source, CopyTo{Object: o, Dest: dest})
	}
}

// load estimates a node's replica count: its last heartbeat (or, for
// this node, its disk) plus the repair copies this owner sent it since.
func (n *Node) load(id node.ID) int {
	l := len(n.Stored)
	if id != n.Self {
		l = n.Peers[id].Load
	}
	for _, r := range n.Repairing {
		if r.Dest == id {
			l++
		}
	}
	return l
}

// leastLoaded returns the up node that ok accepts with the fewest replicas
// (lowest ID on ties), or "".
func (n *Node) leastLoaded(ok func(node.ID) bool) node.ID {
	var best node.ID
	for _, id := range n.View {
		if ok(id) && (best == "" || n.load(id) < n.load(best)) {
			best = id
		}
	}
	return best
}

// balance is the load balancer: a node holding clearly more than the
// least loaded up node moves one replica there.
func (n *Node) balance(env node.Env, now int64) {
	if n.Move != nil {
		if now <= n.Move.Until {
			return
		}
		// No CopyDone in time: keep the replica, and say so to the owner,
		// which may be counting on this node leaving.
		o := n.Move.Object
		n.Move = nil
		if n.Stored[o] {
			n.report(env, o, true, "", Stamp{})
		}
	}
	if time.Duration(now-n.ViewChanged) < grace {
		return
	}
	dest := n.leastLoaded(func(id node.ID) bool { return id != n.Self })
	if dest == "" || len(n.Stored)-n.load(dest) < 3 {
		return
	}
	var movable []string
	for _, o := range sortedKeys(n.Stored) {
		if _, pending := n.Outbox[o]; !pending {
			movable = append(movable, o)
		}
	}
	if len(movable) == 0 {
		return
	}
	o := movable[env.Rand().IntN(len(movable))]
	n.seq++
	n.Move = &Move{ID: Stamp{Inc: n.Incarnation, Seq: n.seq}, Object: o, Dest: dest, Until: now + int64(moveTimeout)}
	env.Log().Info("balance: move replica", "object", o, "to", dest, "load", len(n.Stored), "dest_load", n.load(dest))
	env.Send(dest, Replicate{Object: o, Data: n.data(env, o), Move: n.Move.ID})
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// System describes the replica store to the drivers.
var System = &system.System{
	Name:    "replicastore",
	Summary: "BitVault-style replica store: ring owners index replicas, repair, remove extras and balance load",
	Codec: node.NewCodec().MustRegister(Create{}, Heartbeat{}, Report{}, ReportAck{}, CopyTo{},
		Replicate{}, CopyDone{}, Refuse{}, Delete{}, Sync{}, SyncDone{}),
	New: New,
	Bugs: []system.Bug{
		{Name: "balance-race", Summary: "remove-extra-replicas ignores a move in flight and deletes the copy it relies on: the degree drops below the target"},
		{Name: "transient-failure", Summary: "a node restarting faster than failure detection loses its index and nobody republishes to it: orphan replicas"},
	},
	Sim: system.SimDefaults{
		Nodes: 8,
		Drop:  0.05,
		Dup:   0.02,
		Steps: 200_000,
		Time:  24 * time.Second,
	},
	Scenario: scenario,
	Params: []system.Param{
		{Name: "target", Default: fmt.Sprint(DefaultTarget), Summary: "replicas each object should have (at most --nodes)"},
	},
	Validate: func(cfg system.Config) error {
		target, err := targetParam(cfg)
		if err == nil && target > len(cfg.Nodes) {
			// Every node holds at most one replica of an object: the
			// degree could never be reached, and the alarm would
			// report the correct program as broken.
			err = fmt.Errorf("replicastore: --param target=%d: more replicas than the run's %d nodes can hold (raise --nodes or lower the target)", target, len(cfg.Nodes))
		}
		return err
	},
}

// targetParam reads the "target" parameter: how many replicas each
// object should have.
func targetParam(cfg system.Config) (int, error) {
	target := DefaultTarget
	if v := cfg.Param("target", ""); v != "" {
		if _, err := fmt.Sscanf(v, "%d", &target); err != nil || target < 1 {
			return 0, fmt.Errorf("replicastore: --param target=%q: want a positive integer", v)
		}
	}
	return target, nil
}

// Scenario timing: objects are created in the first seconds, nodes crash
// and restart until crashesEnd, and the rest of the run is quiet so that
// every liveness property must have settled by the end.
const (
	objects       = 30
	createBy      = 6 * time.Second
	crashesFrom   = 2 * time.Second
	crashesEnd    = 16 * time.Second
	maxDownAtOnce = 2
)

// scenario: clients create objects through random up nodes; then, every
// 0.8-2 s, a random node crashes and restarts, half the time faster than
// failure detection (a transient failure) and half the time after it.
func scenario(ctl system.Controller) {
	r := ctl.Rand()
	nodes := ctl.Nodes()
	for i := range objects {
		at := 300*time.Millisecond + time.Duration(r.Int64N(int64(createBy)))
		entry := nodes[r.IntN(len(nodes))]
		c := Create{Object: fmt.Sprintf("obj-%02d", i+1), Data: fmt.Sprintf("data-%02d", i+1)}
		ctl.At(at, func() {
			// Clients retry elsewhere when their entry node is down, and
			// give up when every node is (a run with one node, or crashes
			// a shrunk schedule injects).
			for range nodes {
				if ctl.Handler(entry) != nil {
					ctl.Input(entry, c)
					return
				}
				entry = nodes[(slices.Index(nodes, entry)+1)%len(nodes)]
			}
		})
	}
	down := map[node.ID]bool{}
	at := crashesFrom
	for at < crashesEnd {
		victim := nodes[r.IntN(len(nodes))]
		var downFor time.Duration
		if r.IntN(2) == 0 {
			downFor = 50*time.Millisecond + time.Duration(r.Int64N(int64(failAfter-100*time.Millisecond)))
		} else {
			downFor = failAfter + 200*time.Millisecond + time.Duration(r.Int64N(int64(2*time.Second)))
		}
		ctl.At(at, func() {
			if down[victim] || len(down) >= maxDownAtOnce {
				return
			}
			down[victim] = true
			ctl.Crash(victim)
			ctl.At(ctl.Now()+downFor, func() {
				delete(down, victim)
				ctl.Restart(victim)
			})
		})
		at += 800*time.Millisecond + time.Duration(r.Int64N(int64(1200*time.Millisecond)))
	}
}
