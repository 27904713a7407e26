package examples

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/system"
)

// TestBundledSystemsValidate: every bundled system refuses, before any
// node is built, a parameter it does not know or cannot use, and a run
// its scenario cannot schedule in bounded memory. These used to panic in
// the first handler (exit 1, an empty trace), be silently ignored, or
// schedule billions of inputs up front.
func TestBundledSystemsValidate(t *testing.T) {
	reg := Registry()
	cases := []struct {
		system string
		nodes  int
		params string // KEY=VALUE
		want   string // "" when the run is fine
	}{
		{"paxos", 7, "", ""},
		{"paxos", 7, "bits=9", `paxos: unknown parameter "bits" (takes none)`},
		{"chord", 10, "bitz=12", `unknown parameter "bitz"`},
		{"chord", 800, "", "800 ring positions"},
		{"randtree", 12, "fanout=3", ""},
		{"randtree", 12, "fanout=0", "fanout"},
		{"randtree", 12, "resets=x", "resets"},
		{"randtree", 12, "resets=1000000000", "resets"},
		{"randtree", 12, "fanuot=2", `unknown parameter "fanuot" (known: fanout, resets)`},
		{"replicastore", 8, "target=3", ""},
		{"replicastore", 8, "target=zz", "target"},
		{"replicastore", 8, "targets=3", `unknown parameter "targets"`},
		{"transport", 4, "", ""},
		{"transport", 33, "", "transport: 33 nodes: at most 32"},
		{"transport", 4, "window=8", `unknown parameter "window"`},
		{"raftkv", 3, "tick=5ms", ""},
		{"raftkv", 3, "tick=bogus", "tick"},
		{"raftkv", 3, "tick=0s", "tick"},
		{"raftkv", 3, "writes=-1", "writes"},
		{"raftkv", 3, "writes=1000000000", "writes"},
		{"raftkv", 3, "write=5", `unknown parameter "write"`},
		{"lockserver", 5, "tasks=8", ""},
		{"lockserver", 5, "tasks=0", "tasks"},
		{"lockserver", 5, "locks=x", "locks"},
		{"lockserver", 1, "", "a server and at least one clerk"},
		{"lockserver", 5, "lock=2", `unknown parameter "lock"`},
	}
	for _, c := range cases {
		sys, err := reg.Lookup(c.system)
		if err != nil {
			t.Fatal(err)
		}
		cfg := system.Config{Bug: "none", Nodes: sys.NodeIDs(c.nodes)}
		if c.params != "" {
			k, v, _ := strings.Cut(c.params, "=")
			cfg.Params = map[string]string{k: v}
		}
		err = sys.CheckConfig(cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %d nodes %s: %v", c.system, c.nodes, c.params, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %d nodes %s: %v, want %q", c.system, c.nodes, c.params, err, c.want)
		case err != nil && !strings.HasPrefix(err.Error(), c.system+": "):
			t.Errorf("%s: error %q does not name the system", c.system, err)
		}
	}
}
