package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/replaycheck/replaycheck/node"
)

// jsonlEvent is one line of the jsonl export. Field names are stable:
// scripts (jq, pandas.read_json(lines=True)) depend on them.
type jsonlEvent struct {
	Step     int     `json:"step"`
	Lamport  uint64  `json:"lamport"`
	TimeNS   int64   `json:"time_ns"`
	Node     node.ID `json:"node"`
	Seq      uint64  `json:"seq"`
	Kind     string  `json:"kind"`
	From     node.ID `json:"from,omitempty"`
	SentStep *int    `json:"sent_step,omitempty"`
	MsgType  string  `json:"msg_type,omitempty"`
	// Msg is the decoded message as a JSON object of its fields; when the
	// binary does not know the system (or a field cannot be encoded),
	// MsgText holds the rendered form instead.
	Msg       json.RawMessage `json:"msg,omitempty"`
	MsgText   string          `json:"msg_text,omitempty"`
	Timer     string          `json:"timer,omitempty"`
	Sends     []jsonlSend     `json:"sends,omitempty"`
	TimersSet []string        `json:"timers_set,omitempty"`
	// TimersCancelled names the timers the event cancelled as
	// TimersSet does (by the id when the name was not found).
	TimersCancelled []string `json:"timers_cancelled,omitempty"`
	DiskWrites      int      `json:"disk_writes,omitempty"`
	Violations      []string `json:"violations,omitempty"`
}

type jsonlSend struct {
	To       node.ID `json:"to"`
	Type     string  `json:"type"`
	Received []int   `json:"received_at"` // empty: lost
}

// JSONL writes one JSON object per event of the window, with the message
// of a receive or input decoded into its fields by the system's codec
// (as `replay events` decodes it), so that jq can select on a field.
func JSONL(out io.Writer, w *Window) error {
	bw := bufio.NewWriterSize(out, 1<<16)
	enc := json.NewEncoder(bw)
	viol := w.violationsAt()
	for _, step := range w.Steps() {
		ev := w.Trace.Event(step)
		j := jsonlEvent{Step: step, Lamport: ev.Lamport, TimeNS: int64(w.Trace.Time(ev)), Node: ev.Node, Seq: ev.Seq,
			Kind: ev.Kind.String(), MsgType: ev.MsgType, Timer: ev.TimerName, DiskWrites: ev.DiskWrites}
		if ev.Kind == node.KindRecv {
			j.From = ev.From
			if st, ok := w.Trace.SendStep(ev); ok {
				j.SentStep = &st
			}
		}
		if ev.Kind == node.KindRecv || ev.Kind == node.KindInput {
			j.Msg = w.Render.MessageJSON(ev.MsgType, ev.Payload)
			if j.Msg == nil {
				j.MsgText = w.Render.Message(ev.MsgType, ev.Payload)
			}
		}
		for i, s := range ev.Sends {
			j.Sends = append(j.Sends, jsonlSend{To: s.To, Type: s.Type, Received: nonNil(w.Trace.Receipts(ev.SentMsg(i)))})
		}
		for _, t := range ev.TimersSet {
			j.TimersSet = append(j.TimersSet, t.Name)
		}
		for _, id := range ev.TimersCancelled {
			name, ok := w.Render.TimerName(ev, id)
			if !ok {
				name = fmt.Sprintf("timer %d", id)
			}
			j.TimersCancelled = append(j.TimersCancelled, name)
		}
		for _, v := range viol[step] {
			j.Violations = append(j.Violations, v.Headline())
		}
		if err := enc.Encode(j); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// nonNil makes "never received" an empty list, not null, so that
// len(.received_at) == 0 works in jq.
func nonNil(s []int) []int {
	if s == nil {
		return []int{}
	}
	return s
}
