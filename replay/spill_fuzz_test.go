package replay_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/record"
	"github.com/replaycheck/replaycheck/replay"
)

// FuzzSpilledLoadIsTheInMemoryLoad: whatever the files hold (events out
// of order within a node or between nodes, repeated, missing, receives
// of messages never sent, spread over two files), a spilled load says
// what a load in memory says: the same error, or the same trace.
//
// Each 4 bytes of input make an event: which file and node; whether its
// seq follows the node's previous one, repeats it or steps back; how its
// clock moves; and its kind.
func FuzzSpilledLoadIsTheInMemoryLoad(f *testing.F) {
	f.Add([]byte{0, 2, 1, 0, 0, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 4, 2, 1, 1})
	f.Add([]byte{0, 2, 5, 0, 2, 2, 1, 0, 0, 2, 1, 1, 2, 2, 1, 1, 0, 2, 200, 1, 2, 2, 3, 1})
	f.Add([]byte{0, 2, 1, 0, 1, 2, 1, 0, 0, 0, 0, 1, 1, 1, 250, 2, 3, 2, 9, 3, 2, 2, 1, 2})
	ids := []node.ID{"n1", "n2", "n3"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4*300 {
			data = data[:4*300]
		}
		h := record.Header{System: "paxos", Nodes: ids, Recorded: ids, Driver: "live", Start: 1, Types: []string{"x.M"}}
		var files [2][]*node.Event
		seq, clock := map[node.ID]uint64{}, map[node.ID]uint64{}
		for i := 0; i+3 < len(data); i += 4 {
			b0, b1, b2, b3 := data[i], data[i+1], data[i+2], data[i+3]
			id := ids[int(b0>>1)%len(ids)]
			switch b1 % 8 {
			case 0: // the same seq again
			case 1:
				seq[id] -= min(seq[id], uint64(b1>>3)%4)
			default:
				seq[id]++
			}
			seq[id] = max(seq[id], 1)
			clock[id] = uint64(max(1, int64(clock[id])+int64(int8(b2))))
			ev := &node.Event{Node: id, Seq: seq[id], Lamport: clock[id], Time: int64(i + 1)}
			switch {
			case ev.Seq == 1:
				ev.Kind = node.KindInit
			case b3%4 == 0:
				ev.Kind = node.KindTimer
			case b3%4 == 1:
				ev.Kind, ev.MsgType, ev.Payload = node.KindInput, "x.M", []byte{b2}
			case b3%4 == 2:
				from := ids[int(b3>>2)%len(ids)]
				ev.Kind, ev.From, ev.MsgSeq, ev.SendLamport, ev.MsgType, ev.Payload = node.KindRecv, from, uint64(b3>>4)+1, clock[id]-min(clock[id], uint64(b3>>4)+1), "x.M", []byte{b3}
			default:
				ev.Kind = node.KindRestart
			}
			if b3&0x80 != 0 {
				ev.Sends = []node.Send{{To: ids[int(b2)%len(ids)], Type: "x.M", Digest: uint64(b2)}}
			}
			files[b0&1] = append(files[b0&1], ev)
		}
		dir := t.TempDir()
		var paths []string
		for fi, evs := range files {
			if len(evs) == 0 && fi > 0 {
				continue
			}
			p := filepath.Join(dir, fmt.Sprintf("%d.lz4", fi))
			writeTrace(t, p, h, evs, &record.End{Time: int64(len(data) + 1)})
			paths = append(paths, p)
		}
		mem, memErr := replay.LoadWith(replay.LoadOptions{InMemory: 1 << 30}, paths...)
		spilled, spillErr := replay.LoadWith(replay.LoadOptions{InMemory: -1, TempDir: dir}, paths...)
		if fmt.Sprint(memErr) != fmt.Sprint(spillErr) {
			t.Fatalf("spilled: %v\nin memory: %v", spillErr, memErr)
		}
		if memErr != nil {
			return
		}
		defer spilled.Close()
		sameTrace(t, "fuzzed", mem, spilled)
	})
}
