package replay_test

import (
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/sim"
	"github.com/replaycheck/replaycheck/system"
)

// Text a handler put in a message or a timer's name is the recording's,
// not the tool's: printed raw, it set a terminal's title, wrote its
// clipboard and made one event look like two (a hostile pass).

type shout struct{ Text string }

type shouter struct{}

const hostileText = "a\x1b]0;TITLE\x07b\x1b[2J\nfake line #999\u202e"

func (shouter) Init(env node.Env) {
	env.After(time.Millisecond, hostileText)
	if env.Self() == "n1" {
		env.Send("n2", shout{hostileText})
	}
}
func (shouter) Receive(node.Env, node.ID, node.Message) {}
func (shouter) Timer(node.Env, node.Timer)              {}

func TestRenderedEventsEscapeRecordedText(t *testing.T) {
	sys := &system.System{Name: "shouter", Codec: node.NewCodec().MustRegister(shout{}),
		New: func(node.ID, system.Config) node.Handler { return shouter{} },
		Sim: system.SimDefaults{Nodes: 2, Time: 50 * time.Millisecond}}
	tr := simulate(t, sys, sim.Config{Seed: 1})
	ren := replay.NewRenderer(tr, sys.Codec)
	seen := 0
	for i := range tr.Len() {
		line := ren.Line(i, tr.Event(i))
		if strings.IndexFunc(line, func(r rune) bool { return unicode.IsControl(r) || r == '\u202e' }) >= 0 {
			t.Errorf("event #%d prints raw control text: %q", i, line)
		}
		if strings.Contains(line, `\x1b]0;TITLE\x07`) {
			seen++
		}
	}
	if seen < 2 { // the send, the receive, the timer
		t.Fatalf("the hostile text shows escaped in %d events, want the message and the timer", seen)
	}
}
