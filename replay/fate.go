package replay

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

// Fate is what became of one sent message.
type Fate uint8

// The fates of a message. Traces record sends and receives, crashes and
// restarts, and the run's end (with the simulator's counters), but not
// partitions or the network's drop decisions: a fate is what can be told
// from those, and NotDelivered where the causes cannot be told apart.
const (
	Delivered Fate = iota + 1
	// InFlight: sent less than the latency maximum before the trace ends,
	// so it may still have been on its way.
	InFlight
	// ReceiverDown: the receiver was crashed (and not yet restarted) over
	// the message's whole delivery window, or the run lost messages only
	// that way.
	ReceiverDown
	// Dropped: the network dropped it; the run lost messages only that way
	// (its counters show drops and no partition cuts).
	Dropped
	// Partitioned: cut by a partition; the run lost messages only that way.
	Partitioned
	// NotDelivered: never received, and the trace cannot tell whether it
	// was dropped, cut by a partition or arrived at a down receiver.
	NotDelivered
	// Unrecorded: no receipt is recorded, but the receiver's recording is
	// missing for a stretch after the send (a killed process's unwritten
	// tail, a file cut short): it may have received it there.
	Unrecorded
)

var fateNames = [...]string{"", "delivered", "in flight", "receiver down", "dropped", "partitioned", "not delivered", "receiver unrecorded"}

func (f Fate) String() string {
	if int(f) < len(fateNames) && f != 0 {
		return fateNames[f]
	}
	return fmt.Sprintf("fate(%d)", uint8(f))
}

// MessageFate is the fate of one send: the steps that received it, or why
// none did.
type MessageFate struct {
	Fate     Fate
	Receipts []int
	// Why says in words how the fate was told (empty when delivered).
	Why string
}

// network is what a trace says about its run's network, read once.
type network struct {
	end        int64 // the run's end, Unix ns
	latMin     time.Duration
	latMax     time.Duration
	hasLatency bool
	// latFrom is the first step whose sends the latency bounds: a fork's
	// continuation is simulated, its parent's steps need not be.
	latFrom int
	// The run's counters (sim traces; absent in live ones).
	lost, partitioned, toDown int64
	hasStats                  bool
	down                      map[node.ID][][2]int64 // crash..restart, Unix ns; restart MaxInt64 if none
	// reach[id][k] is the latest end of down[id][:k+1], down[id] sorted by
	// start: whether a node was down over a window is then a binary
	// search, not a scan of every crash of the run.
	reach map[node.ID][]int64
}

// network learns the trace's network once, at the first Fate.
func (t *Trace) network() *network {
	t.netOnce.Do(func() { t.net = t.learnNetwork() })
	return t.net
}

// learnEvent learns what step ev, the next in step order, tells of the
// network: the indexer calls it for every step, so that learning the
// network is not one more pass over a spilled trace.
func (n *network) learnEvent(ev *node.Event) {
	n.end = max(n.end, ev.Time)
	switch ev.Kind {
	case node.KindCrash:
		n.down[ev.Node] = append(n.down[ev.Node], [2]int64{ev.Time, 1<<63 - 1})
	case node.KindRestart:
		if d := n.down[ev.Node]; len(d) > 0 && d[len(d)-1][1] == 1<<63-1 {
			d[len(d)-1][1] = ev.Time
		}
	}
}

// learnNetwork completes what the indexer learnt of the network from the
// steps (t.steps) with what the files' headers and end records say.
func (t *Trace) learnNetwork() *network {
	n := t.steps
	for _, f := range t.Files {
		for _, e := range f.Ends {
			n.end = max(n.end, e.Time)
			if e.Stats != nil {
				n.hasStats = true
				n.lost += e.Stats["lost"]
				n.partitioned += e.Stats["partitioned"]
				n.toDown += e.Stats["to_down_node"]
			}
		}
		if f.Header.Driver != "sim" {
			// Live and merged traces: the counters do not cover every
			// node's network, and no latency bound holds.
			n.hasStats = false
		}
	}
	n.index()
	if lo, hi, ok := parseLatency(t.Header.Run["latency"]); ok {
		switch t.Header.Driver {
		case "sim":
			n.latMin, n.latMax, n.hasLatency = lo, hi, true
		case "fork": // a fork's or predict's branch: simulated after the fork
			if at, err := strconv.Atoi(t.Header.Run["fork_at"]); err == nil && at >= 0 {
				n.latMin, n.latMax, n.hasLatency, n.latFrom = lo, hi, true, at+1
			}
		}
	}
	return n
}

// parseLatency reads the simulator's "MIN-MAX" latency range.
func parseLatency(s string) (lo, hi time.Duration, ok bool) {
	a, b, found := strings.Cut(s, "-")
	if !found {
		return 0, 0, false
	}
	lo, err1 := time.ParseDuration(a)
	hi, err2 := time.ParseDuration(b)
	if err1 != nil || err2 != nil || hi < lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// downOver reports whether id was down over the whole window [from, to].
func (n *network) downOver(id node.ID, from, to int64) bool {
	d := n.down[id]
	// The intervals starting at or before from; one of them covers the
	// window if the latest of their ends is after to.
	k := sort.Search(len(d), func(i int) bool { return d[i][0] > from })
	return k > 0 && to < n.reach[id][k-1]
}

// index sorts each node's down intervals by start (a live node's clock
// may step back) and notes the latest end so far of each.
func (n *network) index() {
	n.reach = make(map[node.ID][]int64, len(n.down))
	for id, d := range n.down {
		slices.SortStableFunc(d, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
		reach := make([]int64, len(d))
		for i, iv := range d {
			reach[i] = iv[1]
			if i > 0 {
				reach[i] = max(reach[i], reach[i-1])
			}
		}
		n.reach[id] = reach
	}
}

// UnrecordedAfter is the first of a receiver's unknown stretches
// (Trace.Unknown) in which it could have received a message sent at
// step without a receipt in the trace: one that ends after the send, in
// which its events were not recorded. One it spent down (its last event
// a crash) is not: it received nothing there.
func UnrecordedAfter(stretches []Unknown, step int) (Unknown, bool) {
	for _, u := range stretches {
		if !u.Down && (u.Until < 0 || u.Until > step) {
			return u, true
		}
	}
	return Unknown{}, false
}

// Fate tells what became of the i-th message ev sent. It is the one
// place that decides it: `replay events`, the trace database and the
// debugger all show this.
func (t *Trace) Fate(ev *node.Event, i int) MessageFate {
	if rs := t.Receipts(ev.SentMsg(i)); len(rs) > 0 {
		return MessageFate{Fate: Delivered, Receipts: rs}
	}
	to := ev.Sends[i].To
	if step, ok := t.Step(ev.Node, ev.Seq); ok {
		if u, ok := UnrecordedAfter(t.Unknown[to], step); ok {
			return MessageFate{Fate: Unrecorded, Why: fmt.Sprintf("%s's recording is missing after #%d (%s): a receipt there is not in the trace", to, u.After, u.Reason)}
		}
	}
	n := t.network()
	latency := n.hasLatency
	if latency && n.latFrom > 0 {
		step, ok := t.Step(ev.Node, ev.Seq)
		latency = ok && step >= n.latFrom
	}
	if latency {
		if left := time.Duration(n.end - ev.Time); left < n.latMax {
			return MessageFate{Fate: InFlight, Why: fmt.Sprintf("sent %v before the end, latency up to %v", left, n.latMax)}
		}
		if n.downOver(to, ev.Time+int64(n.latMin), ev.Time+int64(n.latMax)) {
			return MessageFate{Fate: ReceiverDown, Why: string(to) + " was down over the whole delivery window"}
		}
	} else if n.downOver(to, ev.Time, n.end) {
		return MessageFate{Fate: ReceiverDown, Why: string(to) + " was down from the send to the end"}
	}
	if to == ev.Node && latency {
		// The simulated network never loses a message to self.
		return MessageFate{Fate: ReceiverDown, Why: "a message to self is lost only to a crash"}
	}
	if n.hasStats {
		switch {
		case n.lost > 0 && n.partitioned == 0:
			return MessageFate{Fate: Dropped, Why: "the run dropped " + strconv.FormatInt(n.lost, 10) + " message(s) and cut none by partitions"}
		case n.lost == 0 && n.partitioned > 0:
			return MessageFate{Fate: Partitioned, Why: "the run cut " + strconv.FormatInt(n.partitioned, 10) + " message(s) by partitions and dropped none"}
		case n.lost == 0 && n.partitioned == 0 && n.toDown > 0:
			return MessageFate{Fate: ReceiverDown, Why: "the run lost messages only to down receivers"}
		}
	}
	return MessageFate{Fate: NotDelivered, Why: "dropped, cut by a partition or arrived at a down receiver: the trace cannot tell which"}
}
