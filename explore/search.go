package explore

import (
	"container/heap"
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/sim"
)

// searchStrategy is bounded exhaustive search over global states,
// stateless as in CHESS (Musuvathi et al., OSDI 2008): a run re-executes
// a prefix of decisions from the start, deviates at its last one, and
// continues with the first enabled event at every later decision,
// recording each state it reaches (the world's hash and the faults
// left). A state reached before at no greater depth ends the run: its
// future was explored from there. Every other state's alternatives
// (each other enabled event, and a crash of each up node while the
// fault budget lasts) become prefixes to run. bfs runs the shallowest
// deviation first, dfs the deepest. Depth bounds the decisions of a
// run: the state after the last is counted, not expanded. When no prefix
// is left, the space within the bound is exhausted.
type searchStrategy struct {
	name        string
	p           Params
	s           settings
	frontier    frontier
	seq         int
	visited     map[uint64]int // state key -> shallowest decision point seen
	outstanding int
	started     bool
	run         int
}

// branch is a deviation: at decision point at, run enabled event index
// (or crash a node), after the parent's deviations.
type branch struct {
	parent *branch
	at     int
	index  int
	crash  node.ID
	seq    int
}

func newSearch(name string, p Params, s settings) *searchStrategy {
	st := &searchStrategy{name: name, p: p, s: s, visited: map[uint64]int{}}
	if name == "bfs" {
		st.frontier = &bfsQueue{}
	} else {
		st.frontier = &dfsStack{}
	}
	return st
}

func (s *searchStrategy) Name() string { return s.name }
func (s *searchStrategy) Describe() string {
	return fmt.Sprintf("%s seed=%d depth=%d %s", s.name, s.p.Seed, s.p.Depth, s.s)
}
func (s *searchStrategy) States() int { return len(s.visited) }

func (s *searchStrategy) Next() (sim.Chooser, bool) {
	var b *branch
	if s.started {
		if s.frontier.Len() == 0 {
			return nil, false
		}
		b = s.frontier.pop()
	}
	s.started = true
	r := &searchChooser{core: newCore(s.p.Seed, s.run, false, s.s), s: s, b: b, actions: map[int]*branch{}}
	for q := b; q != nil; q = q.parent {
		r.actions[q.at] = q
		r.lastAt = max(r.lastAt, q.at)
	}
	r.desc = fmt.Sprintf("%s seed=%d run=%d depth=%d %s: %s", s.name, s.p.Seed, s.run, s.p.Depth, s.s, b)
	s.outstanding++
	s.run++
	return r, true
}

// String lists the deviations: "4:2 9x n1" runs enabled event 2 at
// decision 4 and crashes n1 at decision 9.
func (b *branch) String() string {
	var parts []string
	for q := b; q != nil; q = q.parent {
		if q.crash != "" {
			parts = append(parts, fmt.Sprintf("%dx%s", q.at, q.crash))
		} else {
			parts = append(parts, fmt.Sprintf("%d:%d", q.at, q.index))
		}
	}
	if len(parts) == 0 {
		return "first"
	}
	slices.Reverse(parts)
	return fmt.Sprint(parts)
}

func (s *searchStrategy) Done(o Outcome) {
	s.outstanding--
	c, ok := o.Chooser.(*searchChooser)
	if !ok {
		return
	}
	var kids []*branch
	for _, p := range c.points {
		if v, seen := s.visited[p.key]; seen && v <= p.point {
			break // what follows was explored from that visit
		}
		s.visited[p.key] = p.point
		if p.point > s.p.Depth {
			break
		}
		for i := 1; i < p.enabled; i++ {
			kids = append(kids, &branch{parent: c.b, at: p.point, index: i})
		}
		for _, id := range p.crashable {
			kids = append(kids, &branch{parent: c.b, at: p.point, crash: id})
		}
	}
	for _, k := range kids {
		s.seq++
		k.seq = s.seq
	}
	s.frontier.push(kids)
}

type searchChooser struct {
	core
	desc    string
	s       *searchStrategy
	b       *branch
	actions map[int]*branch
	lastAt  int
	points  []searchPoint
	cur     decided
}

// decided is the event a decision chose on its first call, which holds
// through the advance that running it may need.
type decided struct {
	point int
	event string
}

type searchPoint struct {
	point     int
	key       uint64
	enabled   int
	crashable []node.ID
}

func (c *searchChooser) Describe() string { return c.desc }

func (c *searchChooser) Next(ch *sim.Choice) (sim.Decision, error) {
	en := ch.Enabled()
	if len(en) == 0 {
		return sim.Decision{}, nil
	}
	point := c.decisions + 1
	if c.cur.point == point {
		// The call after an advance: the decision was made on the
		// first call, in the state recorded there; run that event.
		for i, p := range en {
			if p.String() == c.cur.event {
				return c.pick(ch, i), nil
			}
		}
		// What the advance ran took it away (a partition): run what
		// comes first instead, as every re-execution will.
		return c.pick(ch, 0), nil
	}
	index := 0
	if point <= c.lastAt {
		if a := c.actions[point]; a != nil {
			if a.crash != "" {
				if !slices.Contains(ch.Up(), a.crash) {
					return sim.Decision{}, fmt.Errorf("explore: re-executing %s: %s is not up at decision %d (the program is not deterministic)", c.b, a.crash, point)
				}
				return c.crash(ch, a.crash), nil
			}
			if a.index >= len(en) {
				return sim.Decision{}, fmt.Errorf("explore: re-executing %s: %d events enabled at decision %d, not %d or more (the program is not deterministic)", c.b, len(en), point, a.index+1)
			}
			index = a.index
		}
	} else {
		key := mix(ch.TimedStateHash(), uint64(c.faults.left))
		if v, seen := c.s.visited[key]; seen && v <= point {
			return c.stop("state explored before"), nil
		}
		p := searchPoint{point: point, key: key, enabled: len(en)}
		if c.faults.left > 0 && ch.Down() < c.maxDown {
			p.crashable = slices.Clone(ch.Up())
		}
		c.points = append(c.points, p)
		if point > c.s.p.Depth {
			return c.stop(fmt.Sprintf("depth bound (%d decisions)", c.s.p.Depth)), nil
		}
	}
	c.cur.point, c.cur.event = point, en[index].String()
	return c.pick(ch, index), nil
}

// frontier holds the deviations still to run.
type frontier interface {
	Len() int
	push([]*branch)
	pop() *branch
}

// dfsStack pops the deepest deviation of the latest run first.
type dfsStack []*branch

func (s *dfsStack) Len() int { return len(*s) }
func (s *dfsStack) push(kids []*branch) {
	// kids come by decision point, then alternative. Each point's
	// alternatives go on reversed, so the top is the deepest point's
	// first alternative.
	for i := 0; i < len(kids); {
		j := i
		for j < len(kids) && kids[j].at == kids[i].at {
			j++
		}
		for k := j - 1; k >= i; k-- {
			*s = append(*s, kids[k])
		}
		i = j
	}
}
func (s *dfsStack) pop() *branch {
	b := (*s)[len(*s)-1]
	*s = (*s)[:len(*s)-1]
	return b
}

// bfsQueue pops the shallowest deviation first, then the oldest.
type bfsQueue []*branch

func (q bfsQueue) Len() int { return len(q) }
func (q bfsQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q bfsQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bfsQueue) Push(x any)   { *q = append(*q, x.(*branch)) }
func (q *bfsQueue) Pop() any {
	old := *q
	b := old[len(old)-1]
	*q = old[:len(old)-1]
	return b
}
func (q *bfsQueue) push(kids []*branch) {
	for _, k := range kids {
		heap.Push(q, k)
	}
}
func (q *bfsQueue) pop() *branch { return heap.Pop(q).(*branch) }
