package shrink

import (
	"bytes"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
)

// A message that never arrived because its receiver was down over its
// whole delivery window is the crash's doing, not a message the network
// lost: a new user's liveness shrink moved a crash earlier and reported
// "messages lost 0 -> 1" where `replay events` said "(receiver down)".
func TestSizeCountsNoLossToADownReceiver(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Drop, cfg.Dup, cfg.Time = 3, 0, 0, 20*time.Second
	cfg = cfg.WithDefaults(paxos.System)
	var buf bytes.Buffer
	if _, err := sim.Run(paxos.System, cfg, &buf); err != nil {
		t.Fatal(err)
	}
	f, err := record.Read(bytes.NewReader(buf.Bytes()), "p.lz4", int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := replay.Merge([]*record.File{f})
	if err != nil {
		t.Fatal(err)
	}
	down := 0
	for i := range tr.Len() {
		ev := tr.Event(i)
		for j, snd := range ev.Sends {
			if snd.To != ev.Node && tr.Fate(ev, j).Fate == replay.ReceiverDown {
				down++
			}
		}
	}
	if down == 0 {
		t.Fatal("no message of this run went to a down receiver: the test shows nothing (pick another seed)")
	}
	if s := sizeOf(f, tr, cfg.LatencyMax); s.Lost != 0 || s.Faults != s.Crashes {
		t.Errorf("a network that drops nothing: %d message(s) to a down receiver counted as lost: %+v", down, s)
	}
}
