package predicates_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/predicates/internal/dd"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// TestDataDriven runs testdata/*.txt. Commands:
//
//	run [nodes=N] [until=DUR] [serial]
//	                            one event per input line:
//	                            [at DUR | +DUR] NODE OP ARGS... (an input, see package dd)
//	                            [at DUR | +DUR] crash|restart NODE
//	                            lines are 1ms apart unless timed; prints the causal steps.
//	                            The run records causal clocks only, as a live
//	                            recording does, so idle nodes' steps come early
//	                            and the checker meets the orders a recording
//	                            gives; serial: clocks as a simulation records
//	                            them by default (time order)
//	file name=F                 writes the input beside the script (for load)
//	check [trace] [values] [stats] [max-steps=N] [nodes=A,B] [from=N] [to=N] [lost=NODE:STEP[:UNTIL]]
//	                            checks the input script against the last run;
//	                            lost: NODE's recording ends after its event
//	                            at STEP (as a killed recorder's file does),
//	                            until its restart at step UNTIL;
//	                            trace: what each step re-evaluated; values:
//	                            each derived value when it changes
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		dir := t.TempDir()
		var trace *replay.Trace
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "run":
				var out string
				trace, out = ddRun(t, d)
				return out
			case "file":
				var name string
				d.ScanArgs(t, "name", &name)
				if err := os.WriteFile(filepath.Join(dir, name), []byte(d.Input), 0o644); err != nil {
					t.Fatal(err)
				}
				return ""
			case "check":
				if trace == nil {
					d.Fatalf(t, "check before run")
				}
				return ddCheck(t, d, dir, trace)
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

func ddRun(t testing.TB, d *datadriven.TestData) (*replay.Trace, string) {
	nodes := 3
	if d.HasArg("nodes") {
		d.ScanArgs(t, "nodes", &nodes)
	}
	type scheduled struct {
		at   time.Duration
		id   node.ID
		op   string
		args []string
	}
	var evs []scheduled
	at := time.Duration(0)
	for _, line := range strings.Split(strings.TrimSpace(d.Input), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "at":
			v, err := time.ParseDuration(f[1])
			if err != nil {
				d.Fatalf(t, "%s: %v", line, err)
			}
			at, f = v, f[2:]
		case strings.HasPrefix(f[0], "+"):
			v, err := time.ParseDuration(f[0][1:])
			if err != nil {
				d.Fatalf(t, "%s: %v", line, err)
			}
			at, f = at+v, f[1:]
		default:
			at += time.Millisecond
		}
		if f[0] == "crash" || f[0] == "restart" {
			evs = append(evs, scheduled{at, node.ID(f[1]), f[0], nil})
		} else {
			evs = append(evs, scheduled{at, node.ID(f[0]), f[1], f[2:]})
		}
	}
	until := at + time.Millisecond
	if d.HasArg("until") {
		var s string
		d.ScanArgs(t, "until", &s)
		u, err := time.ParseDuration(s)
		if err != nil {
			d.Fatalf(t, "until: %v", err)
		}
		until = u
	}
	sys := *dd.System
	sys.Scenario = func(ctl system.Controller) {
		for _, e := range evs {
			ctl.At(e.at, func() {
				switch e.op {
				case "crash":
					ctl.Crash(e.id)
				case "restart":
					ctl.Restart(e.id)
				default:
					ctl.Input(e.id, dd.Cmd{Op: e.op, Args: e.args})
				}
			})
		}
	}
	cfg := sim.Config{Seed: 1, Nodes: nodes, Time: until, Drop: 0, Dup: 0, Churn: 0, CausalClocks: !d.HasArg("serial")}
	var buf bytes.Buffer
	if _, err := sim.Run(&sys, cfg.WithDefaults(&sys), &buf); err != nil {
		d.Fatalf(t, "sim: %v", err)
	}
	tr, err := replay.FromBytes(buf.Bytes(), "dd.lz4")
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	var b strings.Builder
	for step := range tr.Len() {
		ev := tr.Event(step)
		fmt.Fprintf(&b, "#%d t=%v %s %s", step, time.Duration(ev.Time-tr.Header.Start), ev.Node, ev.Kind)
		switch ev.Kind {
		case node.KindInput:
			m, _ := dd.System.Codec.Decode(ev.MsgType, ev.Payload)
			cmd := m.(dd.Cmd)
			fmt.Fprintf(&b, " %s %s", cmd.Op, strings.Join(cmd.Args, " "))
		case node.KindRecv:
			fmt.Fprintf(&b, " from %s", ev.From)
		case node.KindTimer:
			fmt.Fprintf(&b, " %s", ev.TimerName)
		}
		b.WriteString("\n")
	}
	return tr, b.String()
}

func ddCheck(t *testing.T, d *datadriven.TestData, dir string, tr *replay.Trace) string {
	opts := predicates.Options{To: -1}
	var nodes []node.ID
	for _, arg := range d.CmdArgs {
		switch arg.Key {
		case "max-steps":
			n, _ := strconv.ParseUint(arg.Vals[0], 10, 64)
			opts.MaxSteps = n
		case "nodes":
			for _, v := range arg.Vals {
				nodes = append(nodes, node.ID(v))
			}
		case "from":
			opts.From, _ = strconv.Atoi(arg.Vals[0])
		case "to":
			opts.To, _ = strconv.Atoi(arg.Vals[0])
		case "lost":
			f := strings.Split(arg.Vals[0], ":")
			u := replay.Unknown{Until: -1, Reason: "recording cut short"}
			var err error
			if len(f) < 2 || len(f) > 3 {
				err = fmt.Errorf("want NODE:STEP or NODE:STEP:UNTIL")
			}
			if err == nil {
				u.After, err = strconv.Atoi(f[1])
			}
			if err == nil && len(f) == 3 {
				u.Until, err = strconv.Atoi(f[2])
			}
			if err != nil {
				d.Fatalf(t, "lost=%s: %v", arg.Vals[0], err)
			}
			// What merging a file whose segment has no end record
			// leaves, for this check only.
			id := node.ID(f[0])
			kept := tr.Unknown[id]
			tr.Unknown[id] = append(slices.Clone(kept), u)
			defer func() { tr.Unknown[id] = kept }()
		}
	}
	script := filepath.Join(dir, "test.star")
	if err := os.WriteFile(script, []byte(d.Input), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(tr, system.NewRegistry(dd.System), replay.Options{Nodes: nodes})
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	c, err := predicates.Load(script, r, opts)
	if err != nil {
		return "script error: " + strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "") + "\n"
	}
	var b strings.Builder
	shown := map[string]string{}
	for {
		if err := r.Next(); err != nil {
			break
		}
		if err := c.Observe(); err != nil {
			d.Fatalf(t, "observe: %v", err)
		}
		if d.HasArg("trace") {
			st := c.LastStep()
			ev := r.Recorded()
			fmt.Fprintf(&b, "#%d %s %s:", r.Pos(), ev.Node, ev.Kind)
			if len(st.Derived) > 0 {
				fmt.Fprintf(&b, " derived=%s", strings.Join(st.Derived, ","))
			}
			if len(st.Predicates) > 0 {
				fmt.Fprintf(&b, " preds=%s", strings.Join(st.Predicates, ","))
			}
			if len(st.Settled) > 0 {
				fmt.Fprintf(&b, " settled=%s", strings.Join(st.Settled, ","))
			}
			fmt.Fprintf(&b, " bodies=%d", st.Bodies)
			if st.Keys > 0 {
				fmt.Fprintf(&b, " keys=%d", st.Keys)
			}
			if st.Aux > 0 {
				fmt.Fprintf(&b, " aux=%d", st.Aux)
			}
			if st.Rows > 0 {
				fmt.Fprintf(&b, " rows=%d", st.Rows)
			}
			b.WriteString("\n")
		}
		if d.HasArg("values") {
			for _, dv := range c.DerivedValues() {
				if v := dv.Value().String(); shown[dv.Name()] != v || r.Pos() == 0 {
					shown[dv.Name()] = v
					fmt.Fprintf(&b, "#%d %s = %s\n", r.Pos(), dv.Name(), v)
				}
			}
		}
	}
	rep := c.Finish()
	for _, v := range rep.Violations {
		if v.Kind == "safety" {
			fmt.Fprintf(&b, "safety %s at #%d (%s %s)", v.Predicate, v.Step, v.Node, v.Describe())
		} else {
			end := "open"
			if v.EndStep >= 0 {
				end = fmt.Sprintf("#%d", v.EndStep)
			}
			fmt.Fprintf(&b, "liveness %s #%d..%s alarm=%v", v.Predicate, v.Step, end, v.Alarm)
			if v.Alarm {
				fmt.Fprintf(&b, "@#%d", v.AlarmStep)
			}
			if v.Status() == "unjudged" {
				b.WriteString(" unjudged")
			}
		}
		if v.Witness != "" {
			fmt.Fprintf(&b, " witness=%q", v.Witness)
		}
		if v.Alarm && v.AlarmWitness != v.Witness {
			fmt.Fprintf(&b, " alarm_witness=%q", v.AlarmWitness)
		}
		if v.Aux != nil {
			fmt.Fprintf(&b, " aux=%s", v.Aux)
		}
		b.WriteString("\n")
	}
	for _, e := range rep.Errors {
		fmt.Fprintf(&b, "error %s at #%d: %s\n", e.Name, e.Step, strings.ReplaceAll(e.Message, dir+string(filepath.Separator), ""))
	}
	if d.HasArg("stats") {
		fmt.Fprintf(&b, "evaluated %d steps:", rep.Steps)
		for _, p := range c.Predicates() {
			fmt.Fprintf(&b, " %s=%d", p.Name, p.Evals)
		}
		for _, dv := range c.DerivedValues() {
			fmt.Fprintf(&b, " %s=%d", dv.Name(), dv.Evals)
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "ok\n"
	}
	return b.String()
}
