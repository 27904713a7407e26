package export

import (
	"bufio"
	"encoding/json"
	"io"
	"strconv"

	"github.com/replaycheck/replaycheck/node"
)

// Perfetto writes the window in the Chrome trace event format (JSON
// object form), which https://ui.perfetto.dev and chrome://tracing open:
//
//   - one track per node: pid and tid are the node's position among the
//     shown nodes (from 1), named by process_name/thread_name metadata;
//   - each event a complete slice (ph X) named "KIND [TYPE]" with its step,
//     Lamport clock and one-line description in args;
//   - each message received in the window a flow (ph s at the send, ph f
//     with bp e at the receipt) with an id of its own, so Perfetto draws
//     an arrow from the sending slice to the receiving one;
//   - each violation in the window an instant event (ph i, thread scope)
//     on its node's track at its step.
//
// Times are the events' (virtual or recorded) times in microseconds with
// nanosecond decimals. Handlers take no virtual time, so a slice lasts
// 1µs, or up to the node's next event when that comes sooner; events of
// one node at the same instant are nudged 1ns apart so their slices do
// not nest.
func Perfetto(out io.Writer, w *Window) error {
	bw := bufio.NewWriterSize(out, 1<<16)
	bw.WriteString(`{"displayTimeUnit":"ns","traceEvents":[`)
	sep := "\n"
	emit := func(rec []byte) {
		bw.WriteString(sep)
		bw.Write(rec)
		sep = ",\n"
	}
	idx := w.nodeIndex()
	for i, id := range w.Nodes {
		name, _ := json.Marshal(string(id))
		pid := strconv.Itoa(i + 1)
		emit([]byte(`{"ph":"M","name":"process_name","pid":` + pid + `,"tid":` + pid + `,"args":{"name":` + string(name) + `}}`))
		emit([]byte(`{"ph":"M","name":"thread_name","pid":` + pid + `,"tid":` + pid + `,"args":{"name":` + string(name) + `}}`))
	}
	// Slice start per step, and each node's next free time, so that
	// slices of one node never overlap.
	steps := w.Steps()
	start := make(map[int]int64, len(steps))
	free := make([]int64, len(w.Nodes))
	for i := range free {
		free[i] = -1 << 62
	}
	next := make([]int64, len(steps)) // each event's node's next event time (or -1)
	lastPos := make([]int, len(w.Nodes))
	for i := range lastPos {
		lastPos[i] = -1
	}
	for k, step := range steps {
		ev := w.Trace.Event(step)
		t := int64(w.Trace.Time(ev))
		p := idx[ev.Node]
		if j := lastPos[p]; j >= 0 {
			next[j] = t
		}
		lastPos[p] = k
		next[k] = -1
	}
	viol := w.violationsAt()
	flow := 0
	var rec []byte
	for k, step := range steps {
		ev := w.Trace.Event(step)
		p := idx[ev.Node]
		pid := strconv.Itoa(p + 1)
		t := max(int64(w.Trace.Time(ev)), free[p])
		dur := int64(1000)
		if n := next[k]; n >= 0 && n-t < dur && n > t {
			dur = n - t
		}
		if dur < 1 {
			dur = 1
		}
		free[p] = t + dur
		start[step] = t
		name := ev.Kind.String()
		if ev.MsgType != "" {
			name += " " + ev.MsgType
		} else if ev.TimerName != "" {
			name += " " + ev.TimerName
		}
		rec = append(rec[:0], `{"ph":"X","pid":`...)
		rec = append(rec, pid...)
		rec = append(rec, `,"tid":`...)
		rec = append(rec, pid...)
		rec = append(rec, `,"ts":`...)
		rec = appendMicros(rec, t)
		rec = append(rec, `,"dur":`...)
		rec = appendMicros(rec, dur)
		rec = append(rec, `,"name":`...)
		rec = appendJSONString(rec, name)
		rec = append(rec, `,"cat":`...)
		rec = appendJSONString(rec, ev.Kind.String())
		rec = append(rec, `,"args":{"step":`...)
		rec = strconv.AppendInt(rec, int64(step), 10)
		rec = append(rec, `,"lamport":`...)
		rec = strconv.AppendUint(rec, ev.Lamport, 10)
		rec = append(rec, `,"event":`...)
		rec = appendJSONString(rec, oneLine(w.Render.Summary(ev)))
		rec = append(rec, "}}"...)
		emit(rec)
		// The flow's finish binds to this slice: the receipt.
		if ev.Kind == node.KindRecv {
			if send, ok := w.Trace.SendStep(ev); ok && w.In(send) {
				flow++
				id := flowID(ev)
				rec = append(rec[:0], `{"ph":"s","pid":`...)
				sp := strconv.Itoa(idx[w.Trace.Event(send).Node] + 1)
				rec = append(rec, sp...)
				rec = append(rec, `,"tid":`...)
				rec = append(rec, sp...)
				rec = append(rec, `,"ts":`...)
				rec = appendMicros(rec, start[send])
				rec = append(rec, `,"id":`...)
				rec = strconv.AppendInt(rec, int64(flow), 10)
				rec = append(rec, `,"name":`...)
				rec = appendJSONString(rec, ev.MsgType)
				rec = append(rec, `,"cat":"msg","args":{"message":`...)
				rec = appendJSONString(rec, id)
				rec = append(rec, "}}"...)
				emit(rec)
				rec = append(rec[:0], `{"ph":"f","bp":"e","pid":`...)
				rec = append(rec, pid...)
				rec = append(rec, `,"tid":`...)
				rec = append(rec, pid...)
				rec = append(rec, `,"ts":`...)
				rec = appendMicros(rec, t)
				rec = append(rec, `,"id":`...)
				rec = strconv.AppendInt(rec, int64(flow), 10)
				rec = append(rec, `,"name":`...)
				rec = appendJSONString(rec, ev.MsgType)
				rec = append(rec, `,"cat":"msg"}`...)
				emit(rec)
			}
		}
		for _, v := range viol[step] {
			a := map[string]any{"predicate": v.Predicate, "kind": v.Kind, "status": v.Status(),
				"step": v.Step, "witness": v.Witness, "aux": auxString(v.Aux)}
			if v.Alarm {
				// The mark is at the interval's first step; its aux is
				// the alarm's, at this step.
				a["alarm_step"] = v.AlarmStep
				if v.AlarmWitness != v.Witness {
					a["alarm_witness"] = v.AlarmWitness
				}
			}
			args, _ := json.Marshal(a)
			rec = append(rec[:0], `{"ph":"i","s":"t","pid":`...)
			rec = append(rec, pid...)
			rec = append(rec, `,"tid":`...)
			rec = append(rec, pid...)
			rec = append(rec, `,"ts":`...)
			rec = appendMicros(rec, t)
			rec = append(rec, `,"name":`...)
			rec = appendJSONString(rec, "violation: "+v.Predicate)
			rec = append(rec, `,"cat":"violation","args":`...)
			rec = append(rec, args...)
			rec = append(rec, '}')
			emit(rec)
		}
	}
	bw.WriteString("\n]}\n")
	return bw.Flush()
}

// flowID names a message as the trace does: sender/seq/index.
func flowID(recv *node.Event) string { return recv.Msg().String() }

// appendMicros writes ns as microseconds with three decimals, exactly
// (a float64 would round large times).
func appendMicros(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	frac := ns % 1000
	if frac == 0 {
		return b
	}
	b = append(b, '.')
	b = append(b, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	return b
}

func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
