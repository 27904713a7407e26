package chainrep

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Node counts a run may have: a client, a master and 2 to 9 servers (ten
// or more would name s10, which sorts before s2 in traces and tables).
const (
	MinNodes = 4
	MaxNodes = 11
)

// restartAfter is how long a node the "crash" parameter crashes stays
// down. A server that comes back retires; the master and client recover.
const restartAfter = time.Second

// Crash is one group of nodes the "crash" parameter crashes together.
type Crash struct {
	At    time.Duration
	Nodes []node.ID
}

// ParseCrashes reads the "crash" parameter: comma-separated groups
// "NODE[+NODE...]@TIME", e.g. "s2+s3@3s" crashes s2 and s3 at the same
// virtual time 3 s (restarting them a second later).
func ParseCrashes(param string) ([]Crash, error) {
	var out []Crash
	if strings.TrimSpace(param) == "" {
		return nil, nil
	}
	for _, group := range strings.Split(param, ",") {
		ids, at, ok := strings.Cut(strings.TrimSpace(group), "@")
		if !ok {
			return nil, fmt.Errorf("--param crash=%q: group %q lacks @TIME (want e.g. s2+s3@3s)", param, group)
		}
		d, err := time.ParseDuration(at)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("--param crash=%q: %q is not a time (want e.g. 3s)", param, at)
		}
		c := Crash{At: d}
		for _, id := range strings.Split(ids, "+") {
			if id = strings.TrimSpace(id); id == "" {
				return nil, fmt.Errorf("--param crash=%q: empty node name in %q", param, group)
			}
			c.Nodes = append(c.Nodes, node.ID(id))
		}
		out = append(out, c)
	}
	return out, nil
}

// validate rejects node counts and parameters the system cannot run.
func validate(cfg system.Config) error {
	if n := len(cfg.Nodes); n < MinNodes || n > MaxNodes {
		return fmt.Errorf("chainrep: %d nodes: need %d to %d (a client, a master and 2 to 9 servers)", n, MinNodes, MaxNodes)
	}
	crashes, err := ParseCrashes(cfg.Param("crash", ""))
	if err != nil {
		return fmt.Errorf("chainrep: %w", err)
	}
	for _, c := range crashes {
		for _, id := range c.Nodes {
			if !slices.Contains(cfg.Nodes, id) {
				return fmt.Errorf("chainrep: --param crash: no node %q in this run (nodes: %v)", id, cfg.Nodes)
			}
		}
	}
	return nil
}

// scenario: with the "crash" parameter, exactly those crashes. Otherwise
// the master and the client each crash once at a random time and recover;
// servers fail only by the simulator's churn.
func scenario(ctl system.Controller) {
	crashes, err := ParseCrashes(ctl.Config().Param("crash", ""))
	if err != nil {
		// Validate rejects this before the run; a driver that skips it
		// gets no crashes rather than a panic.
		return
	}
	if crashes != nil {
		for _, c := range crashes {
			ctl.At(c.At, func() {
				for _, id := range c.Nodes {
					ctl.Crash(id)
				}
				ctl.At(c.At+restartAfter, func() {
					for _, id := range c.Nodes {
						ctl.Restart(id)
					}
				})
			})
		}
		return
	}
	r := ctl.Rand()
	for _, id := range []node.ID{MasterID, ClientID} {
		if !slices.Contains(ctl.Nodes(), id) {
			continue
		}
		at := 2*time.Second + time.Duration(r.Int64N(int64(12*time.Second)))
		down := 200*time.Millisecond + time.Duration(r.Int64N(int64(800*time.Millisecond)))
		ctl.At(at, func() {
			ctl.Crash(id)
			ctl.At(at+down, func() { ctl.Restart(id) })
		})
	}
}
