package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/replaycheck/replaycheck/lamport"
)

// ShiVizRegex is the parser ShiViz needs for the log ShiViz writes: the
// host, the vector clock as a JSON object, then the step and Lamport clock
// (extra named groups become event fields ShiViz shows and can filter on),
// then the event. The clock is matched as what it is, a JSON object of
// quoted names and counts, because event text holds braces too
// (paxos.Accept{Round:8}) and so may a node's name (matched up to its
// first '}', a name holding one split the line wrongly); the host is
// the shortest text before such a clock and the step (a node's name may
// hold spaces: "\S+" refused the line).
const ShiVizRegex = `(?<host>.+?) (?<clock>\{(?:"(?:[^"\\]|\\.)*":\d+,?)*\}) #(?<step>\d+) L=(?<lamport>\d+) (?<event>.*)`

// ShiViz writes the window as a ShiViz log file: the parser regex on the
// first line, an empty execution delimiter on the second (one execution),
// then one line per event:
//
//	n3 {"n3":29,"n5":30} #270 L=60 recv paxos.Accept{Round:82 Value:x7} from n5 (sent #267)
//
// ShiViz loads such a file as it is; to paste into its text box instead,
// paste the lines from the third on and the regex into the parser field.
//
// The vector clocks are computed over the exported events only, since
// ShiViz checks that each host's own entry starts at 1 and grows by one
// per event, and that every entry names an event it has: a receive
// whose send lies outside the window (or on a node not shown) counts as a
// local event here.
func ShiViz(out io.Writer, w *Window) error {
	bw := bufio.NewWriterSize(out, 1<<16)
	fmt.Fprintf(bw, "%s\n\n", ShiVizRegex)
	idx := w.nodeIndex()
	hosts := make([][]byte, len(w.Nodes)) // JSON-quoted names, made once
	for i, id := range w.Nodes {
		hosts[i], _ = json.Marshal(string(id))
	}
	vs := lamport.NewVectors(len(w.Nodes), w.Len())
	at := make(map[int]int, w.Len()) // step -> index in vs
	viol := w.violationsAt()
	var line []byte
	for _, step := range w.Steps() {
		ev := w.Trace.Event(step)
		cause := -1
		if send, ok := w.Trace.SendStep(ev); ok {
			if i, ok := at[send]; ok {
				cause = i
			}
		}
		i := vs.Add(idx[ev.Node], cause)
		at[step] = i
		line = append(line[:0], ev.Node...)
		line = append(line, " {"...)
		first := true
		for p, c := range vs.At(i) {
			if c == 0 {
				continue
			}
			if !first {
				line = append(line, ',')
			}
			first = false
			line = append(line, hosts[p]...)
			line = append(line, ':')
			line = fmt.Appendf(line, "%d", c)
		}
		line = fmt.Appendf(line, "} #%d L=%d %s", step, ev.Lamport, ev.Kind)
		if s := w.Render.Summary(ev); s != "" {
			line = append(line, ' ')
			line = append(line, oneLine(s)...)
		}
		for _, v := range viol[step] {
			line = append(line, " !! "...)
			line = append(line, oneLine(v.Headline())...)
		}
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// oneLine keeps a rendered value on its line: a decoded string field may
// hold a newline, which would start a new (unparseable) log record.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}
