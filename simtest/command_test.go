package simtest_test

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/cli"
	"github.com/replaycheck/replaycheck/examples"
	"github.com/replaycheck/replaycheck/examples/chord"
	"github.com/replaycheck/replaycheck/examples/paxos"
	"github.com/replaycheck/replaycheck/examples/raftkv"
	"github.com/replaycheck/replaycheck/examples/randtree"
	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/simtest"
	"github.com/replaycheck/replaycheck/system"
)

// notInTrace are the sim.Config fields that do not change what a run
// records, so a reproduction command has no flag for them. (TaskBound only
// decides how long to wait for a task stuck outside the runtime.)
var notInTrace = map[string]bool{"Log": true, "Observe": true, "Progress": true, "Stop": true, "TaskBound": true,
	// Watch the wall clock, not the run: a stall ends it, it changes no event.
	"HandlerBound": true, "OnStall": true}

// TestSimCommandPrintsEveryField: for every sim.Config field (found by
// reflection, so a field added later is covered without editing this
// test), a value other than the default changes the printed command. A
// field SimCommand forgets fails here.
func TestSimCommandPrintsEveryField(t *testing.T) {
	sys := paxos.System
	base := sim.DefaultConfig().WithDefaults(sys)
	baseCmd := simtest.SimCommand(sys, base, "t.lz4")
	typ := reflect.TypeFor[sim.Config]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if notInTrace[f.Name] {
			continue
		}
		cfg := base
		v := reflect.ValueOf(&cfg).Elem().Field(i)
		switch {
		case f.Name == "Bug":
			v.SetString("spec")
		case f.Name == "MaxDown":
			v.SetInt(1) // the default for 7 nodes is 3
		case f.Type == reflect.TypeFor[time.Duration]():
			v.SetInt(v.Int() + int64(3*time.Millisecond))
		case f.Type.Kind() == reflect.Int:
			v.SetInt(v.Int() + 1)
		case f.Type.Kind() == reflect.Uint64:
			v.SetUint(v.Uint() + 1)
		case f.Type.Kind() == reflect.Float64:
			v.SetFloat(0.125)
		case f.Type.Kind() == reflect.Bool:
			v.SetBool(!v.Bool())
		case f.Name == "Codec":
			v.SetString("cbor-core-deterministic/1")
		case f.Name == "Chooser":
			v.Set(reflect.ValueOf(sim.NewScheduleChooser(&sim.Schedule{})))
		case f.Type == reflect.TypeFor[map[string]string]():
			v.Set(reflect.ValueOf(map[string]string{"k": "v"}))
		default:
			t.Errorf("sim.Config.%s (%v): this test does not know how to change it; teach it, and SimCommand", f.Name, f.Type)
			continue
		}
		if simtest.SimCommand(sys, cfg, "t.lz4") == baseCmd {
			t.Errorf("sim.Config.%s changed but the reproduction command did not: %s", f.Name, baseCmd)
		}
	}
}

// anyParams accepts every parameter, so that values a shell would split
// or interpret can be tried.
var anyParams = &system.System{
	Name:  "anyparams",
	Codec: node.NewCodec(),
	New:   func(node.ID, system.Config) node.Handler { return &ticker{} },
	Sim:   system.SimDefaults{Nodes: 3, Churn: 1, Time: time.Second},
}

type ticker struct{ N int }

func (k *ticker) Init(env node.Env)                       { env.After(time.Millisecond, "t") }
func (k *ticker) Receive(node.Env, node.ID, node.Message) {}
func (k *ticker) Timer(env node.Env, _ node.Timer) {
	k.N++
	env.After(time.Duration(1+env.Rand().IntN(20))*time.Millisecond, "t")
}

// TestSimCommandReproduces runs the printed command through the command
// line and compares trace bytes with the run it was printed for, for
// configurations that differ from the defaults in every setting.
func TestSimCommandReproduces(t *testing.T) {
	reg := system.NewRegistry(append(examples.All(), anyParams)...)
	cfgs := []struct {
		sys *system.System
		cfg sim.Config
	}{
		{paxos.System, sim.Config{Seed: 3, Nodes: 5, Drop: 0.1, Dup: 0.05, Churn: 2, Time: 2 * time.Second,
			LatencyMin: 2 * time.Millisecond, LatencyMax: 7 * time.Millisecond,
			DownMin: 10 * time.Millisecond, DownMax: 40 * time.Millisecond, MaxDown: 1, NoStateHashes: true}},
		{paxos.System, sim.Config{Seed: 9, Bug: "no-persist", Churn: 0.1 + 0.2, Drop: 1.0 / 3, Dup: sim.Unset,
			LatencyMin: 1, LatencyMax: 1, DownMin: 1, DownMax: 1, Steps: 700}},
		{chord.System, sim.Config{Seed: 4, Bug: "finger-slow", Nodes: 20, Steps: 3000, Time: 3 * time.Second,
			Drop: sim.Unset, Dup: sim.Unset, Churn: 0.5, MaxDown: 2,
			Params: map[string]string{"bits": "10", "leave_at": "1s"}}},
		{randtree.System, sim.Config{Seed: 2, Drop: sim.Unset, Dup: 0.2, Churn: sim.Unset,
			DownMin: 5 * time.Millisecond, DownMax: 5 * time.Millisecond, Params: map[string]string{"fanout": "3"}}},
		{raftkv.System, sim.Config{Seed: 5, Drop: 0.02, Dup: sim.Unset, Churn: sim.Unset, Time: 3 * time.Second,
			Params: map[string]string{"tick": "5ms", "writes": "50"}}},
		{anyParams, sim.Config{Seed: 6, Drop: sim.Unset, Dup: sim.Unset, Churn: 3, MaxDown: 2,
			Params: map[string]string{"a b": "it's $HOME; *", "empty": "", "eq": "x=y"}}},
	}
	dir := t.TempDir()
	for i, c := range cfgs {
		cfg := c.cfg.WithDefaults(c.sys)
		var want bytes.Buffer
		if _, err := sim.Run(c.sys, cfg, &want); err != nil {
			t.Fatalf("config %d: %v", i, err)
		}
		out := filepath.Join(dir, c.sys.Name+" run "+string(rune('a'+i))+".lz4") // a space to quote
		command := simtest.SimCommand(c.sys, c.cfg, out)
		args := shellSplit(t, command)
		if len(args) < 2 || args[0] != "replay" || args[1] != "sim" {
			t.Fatalf("config %d: not a replay sim command: %s", i, command)
		}
		var stdout, stderr bytes.Buffer
		app := &cli.App{Registry: reg, Stdout: &stdout, Stderr: &stderr}
		if code := app.Run(args[1:]); code != 0 {
			t.Fatalf("config %d: %s\nexit %d: %s", i, command, code, stderr.String())
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Errorf("config %d: the printed command does not reproduce the run (%d vs %d bytes):\n%s", i, len(got), want.Len(), command)
		}
	}
}

// shellSplit splits a command line as a POSIX shell does for the quoting
// SimCommand uses: words separated by spaces, single-quoted strings, and
// a backslash-escaped quote between two quoted parts.
func shellSplit(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case quoted && ch == '\'':
			quoted = false
		case quoted:
			w.WriteByte(ch)
		case ch == '\'':
			quoted, inWord = true, true
		case ch == '\\' && i+1 < len(s):
			i++
			w.WriteByte(s[i])
			inWord = true
		case ch == ' ':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case strings.IndexByte("$;*?&|<>()`\"#~", ch) >= 0:
			t.Fatalf("unquoted shell metacharacter %q in %s", ch, s)
		default:
			w.WriteByte(ch)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %s", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}
