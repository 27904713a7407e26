package system_test

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

type idle struct{}

func (idle) Init(node.Env)                           {}
func (idle) Receive(node.Env, node.ID, node.Message) {}
func (idle) Timer(node.Env, node.Timer)              {}

// A system that cannot run, or whose Validate panics, is refused with an
// error naming the system: they were nil-pointer panics with a stack.
func TestCheckConfigRefusesABrokenSystem(t *testing.T) {
	newIdle := func(node.ID, system.Config) node.Handler { return idle{} }
	for _, c := range []struct {
		sys  *system.System
		want string
	}{
		{&system.System{Name: "nonew", Codec: node.NewCodec()}, `system "nonew" has no New`},
		{&system.System{Name: "nocodec", New: newIdle}, `system "nocodec" has no Codec`},
		{&system.System{Name: "vpanic", New: newIdle, Codec: node.NewCodec(),
			Validate: func(system.Config) error { panic("boom") }}, `system "vpanic": its Validate hook panicked: boom`},
	} {
		err := c.sys.CheckConfig(system.Config{Nodes: []node.ID{"n1"}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.sys.Name, err, c.want)
		}
	}
	ok := &system.System{Name: "ok", New: newIdle, Codec: node.NewCodec()}
	if err := ok.CheckConfig(system.Config{Nodes: []node.ID{"n1"}}); err != nil {
		t.Errorf("a runnable system: %v", err)
	}
}

// A system that documents its --param keys has the others refused before
// its Validate runs; one that documents none leaves them to Validate.
func TestCheckConfigRefusesUndocumentedParams(t *testing.T) {
	newIdle := func(node.ID, system.Config) node.Handler { return idle{} }
	validated := false
	sys := &system.System{Name: "kv", New: newIdle, Codec: node.NewCodec(),
		Params:   []system.Param{{Name: "ops", Default: "100", Summary: "client operations"}, {Name: "crashes", Summary: "on or off"}},
		Validate: func(system.Config) error { validated = true; return nil }}
	err := sys.CheckConfig(system.Config{Nodes: []node.ID{"n1"}, Params: map[string]string{"opz": "3"}})
	if err == nil || err.Error() != `kv: unknown parameter "opz" (known: crashes, ops)` || validated {
		t.Fatalf("an undocumented key: %v (Validate ran: %v)", err, validated)
	}
	if err := sys.CheckConfig(system.Config{Nodes: []node.ID{"n1"}, Params: map[string]string{"ops": "3"}}); err != nil || !validated {
		t.Fatalf("a documented key: %v (Validate ran: %v)", err, validated)
	}
	sys.Params = nil
	if err := sys.CheckConfig(system.Config{Nodes: []node.ID{"n1"}, Params: map[string]string{"opz": "3"}}); err != nil {
		t.Fatalf("no keys documented: %v", err)
	}
}
