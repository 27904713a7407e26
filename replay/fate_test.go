package replay_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
)

// TestFate: each undelivered message gets the one fate the trace can
// tell, and "not delivered" when the causes cannot be told apart.
func TestFate(t *testing.T) {
	ms := int64(time.Millisecond)
	mk := func(id node.ID, seq uint64, kind node.Kind, at int64, to ...node.ID) *node.Event {
		e := &node.Event{Node: id, Seq: seq, Lamport: seq, Kind: kind, Time: at}
		for _, d := range to {
			e.Sends = append(e.Sends, node.Send{To: d, Type: "paxos.Collect", Digest: xxhash.Sum64(nil)})
		}
		return e
	}
	recv := func(seq uint64, at int64, fromSeq uint64) *node.Event {
		e := mk("n2", seq, node.KindRecv, at)
		e.From, e.MsgSeq, e.MsgType = "n1", fromSeq, "paxos.Collect"
		return e
	}
	type send struct {
		seq  uint64
		want replay.Fate
	}
	for _, c := range []struct {
		name   string
		driver string
		stats  map[string]int64
		sends  []send
	}{
		{"sim drops only", "sim", map[string]int64{"lost": 1}, []send{
			{2, replay.Delivered}, {3, replay.ReceiverDown}, {4, replay.Dropped}, {5, replay.InFlight}}},
		{"sim partitions only", "sim", map[string]int64{"partitioned": 3}, []send{
			{3, replay.ReceiverDown}, {4, replay.Partitioned}, {5, replay.InFlight}}},
		{"sim both", "sim", map[string]int64{"lost": 1, "partitioned": 3}, []send{
			{4, replay.NotDelivered}}},
		// A live trace has no latency bound: nothing is known to be in
		// flight, and a receiver that restarted may have been up when it came.
		{"live", "live", nil, []send{{3, replay.NotDelivered}, {4, replay.NotDelivered}, {5, replay.NotDelivered}}},
		// A fork (or a predict branch) is simulated after its fork step:
		// the latency bounds the sends from there on, not the parent's.
		{"fork after #4", "fork", nil, []send{{3, replay.ReceiverDown}, {4, replay.NotDelivered}, {5, replay.InFlight}}},
		{"fork after #5", "fork", nil, []send{{3, replay.NotDelivered}, {5, replay.InFlight}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs := []*node.Event{
				mk("n1", 1, node.KindInit, 0), mk("n2", 1, node.KindInit, 0),
				mk("n1", 2, node.KindTimer, 10*ms, "n2"), recv(2, 12*ms, 2),
				mk("n2", 3, node.KindCrash, 20*ms),
				mk("n1", 3, node.KindTimer, 30*ms, "n2"), // n2 down until 200ms
				mk("n2", 4, node.KindRestart, 200*ms),
				mk("n1", 4, node.KindTimer, 300*ms, "n2"),
				mk("n1", 5, node.KindTimer, 998*ms, "n2"), // 2ms before the end
			}
			for i, e := range evs {
				e.Lamport = uint64(i + 1)
			}
			evs[3].SendLamport = evs[2].Lamport
			h := &record.Header{System: "paxos", Bug: "none", Nodes: []node.ID{"n1", "n2"}, Recorded: []node.ID{"n1", "n2"},
				Driver: c.driver, Run: map[string]string{"latency": "1ms-5ms"}}
			if at, ok := strings.CutPrefix(c.name, "fork after #"); ok {
				h.Run["fork_at"] = at
			}
			f := &record.File{Path: "f.lz4", Header: h, Segments: []*record.Header{h}, Events: evs, SegmentStart: []int{0}, SegmentEnded: []bool{true}, Ended: true,
				Ends: []record.End{{Time: 1000 * ms, Stats: c.stats}}}
			tr, err := replay.Merge([]*record.File{f})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range c.sends {
				st, _ := tr.Step("n1", s.seq)
				got := tr.Fate(tr.Event(st), 0)
				if got.Fate != s.want {
					t.Errorf("n1 seq %d: %v (%s), want %v", s.seq, got.Fate, got.Why, s.want)
				}
				if got.Fate != replay.Delivered && got.Why == "" {
					t.Errorf("n1 seq %d: %v without a why", s.seq, got.Fate)
				}
			}
		})
	}
}

// A message to a node whose recording is missing after the send (a killed
// process's unwritten tail) is not "never received": the receipt may be
// in what the recording lost (a user's leader committed what the acks it
// was said never to receive acknowledged).
func TestFateOfAMessageToAnUnrecordedReceiver(t *testing.T) {
	n1 := nodeFile("n1", []*node.Event{ev("n1", 1, node.KindInit), ev("n1", 2, node.KindTimer)}, nil, false)
	send := ev("n2", 2, node.KindTimer)
	send.Lamport = 10
	send.Sends = []node.Send{{To: "n1", Type: "paxos.Collect", Digest: xxhash.Sum64(nil)}}
	n2 := nodeFile("n2", []*node.Event{ev("n2", 1, node.KindInit), send}, nil, true)
	tr, err := replay.Merge([]*record.File{n1, n2})
	if err != nil {
		t.Fatal(err)
	}
	if us := tr.Unknown["n1"]; len(us) != 1 || !us[0].Killed {
		t.Fatalf("n1: %+v, want its killed tail unknown", us)
	}
	step, ok := tr.Step("n2", 2)
	if !ok {
		t.Fatal("n2's send is not in the trace")
	}
	f := tr.Fate(tr.Event(step), 0)
	if f.Fate != replay.Unrecorded || !strings.Contains(f.Why, "n1's recording is missing after #") {
		t.Fatalf("fate %v (%s), want receiver unrecorded", f.Fate, f.Why)
	}
	line := replay.NewRenderer(tr, nil).Line(step, tr.Event(step))
	if strings.Contains(line, "never received") || !strings.Contains(line, "receipt unknown: n1's recording is missing after it") {
		t.Fatalf("the step's line: %s", line)
	}
}
