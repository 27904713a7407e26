// Package paxos is the Paxos variant of the WiDS Checker paper: every
// process is both a leader and an agent. Leaders choose increasing round
// numbers from disjoint sets; phase 1 (Collect / Last) learns the latest
// accepted round and value from a majority of agents, phase 2 (Begin /
// Accept) submits the value of the highest-numbered round among those
// responses, or the leader's own value if none accepted anything. An agent
// that accepts tells every leader, so leaders learn the decision; a leader
// sleeps a random period before each new round until it learns one.
//
// Seeded bugs (--bug):
//
//   - latest-response: phase 2 submits the value of the latest response
//     received instead of the highest-numbered round; agreement breaks.
//   - spec: the published specification's flaw: an agent keeps the round it
//     promised (Collect) and the round it accepted (Begin) in separate
//     counters, so after missing a Collect it accepts a Begin, later
//     promises and accepts a smaller round, and its accepted round goes
//     down.
//   - no-persist: agents keep their promise and accepted round in memory
//     only; a crash forgets them and, with churn, agreement breaks.
package paxos

import (
	"fmt"
	"math"
	"time"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/system"
)

// Propose is the external input: a client asks this process to get Value
// chosen.
type Propose struct{ Value string }

// Collect is phase 1a: a leader asks agents to promise round Round.
type Collect struct{ Round int64 }

// Last is phase 1b: an agent promises Round and reports the latest round it
// accepted and that round's value.
type Last struct {
	Round         int64
	AcceptedRound int64
	AcceptedValue string
}

// Begin is phase 2a: a leader asks agents to accept Value in Round.
type Begin struct {
	Round int64
	Value string
}

// Accept is phase 2b: an agent accepted Value in Round; sent to every
// leader, which learn the decision from a majority of them.
type Accept struct {
	Round int64
	Value string
}

// Agent is the acceptor role's state.
type Agent struct {
	// Promised is the highest round this agent promised not to go below.
	Promised      int64
	AcceptedRound int64
	AcceptedValue string
}

// Phase of a leader's current round.
const (
	Idle       = 0
	Collecting = 1
	Begun      = 2
)

// Leader is the proposer and learner role's state.
type Leader struct {
	Round    int64 // the round this leader runs (0: none yet)
	Phase    int
	Proposal string // the value a client asked for; "" until one does
	// Lasts holds this round's phase-1 responses, in order of receipt.
	Lasts   []Response
	MaxSeen int64 // highest round number seen, so new rounds exceed it
	// Accepts counts, per round, which agents accepted which value.
	Accepts  map[int64]map[node.ID]string
	Decided  bool
	Decision string
}

// Response is one agent's phase-1 answer.
type Response struct {
	From node.ID
	Last Last
}

// Process is one Paxos process: a leader and an agent.
type Process struct {
	Self   node.ID
	Index  int // position in the sorted node list; rounds are Index+1 mod N
	N      int
	Agent  Agent
	Leader Leader
	bug    string
	timer  node.TimerID
}

// Timing of leaders' rounds: sleeps shorter than a round trip make
// leaders duel, which is the contention that exposes the seeded bugs.
const (
	sleepMin = 10 * time.Millisecond
	sleepMax = 60 * time.Millisecond
)

const (
	agentKey  = "agent"
	leaderKey = "leader"
)

// New builds a process.
func New(id node.ID, cfg system.Config) node.Handler {
	p := &Process{Self: id, N: len(cfg.Nodes), bug: cfg.Bug}
	for i, n := range cfg.Nodes {
		if n == id {
			p.Index = i
		}
	}
	p.Leader.Accepts = map[int64]map[node.ID]string{}
	return p
}

func (p *Process) majority() int { return p.N/2 + 1 }

func (p *Process) persists() bool { return p.bug != "no-persist" }

// Init implements node.Handler: restore durable state, then sleep before
// the first round.
func (p *Process) Init(env node.Env) {
	if p.persists() {
		if b, ok := env.Disk().Get(agentKey); ok {
			if err := node.Unmarshal(b, &p.Agent); err != nil {
				panic(fmt.Sprintf("paxos: corrupt agent state on disk: %v", err))
			}
		}
	}
	if b, ok := env.Disk().Get(leaderKey); ok {
		if err := node.Unmarshal(b, &p.Leader.MaxSeen); err != nil {
			panic(fmt.Sprintf("paxos: corrupt leader state on disk: %v", err))
		}
	}
	p.sleep(env)
}

func (p *Process) sleep(env node.Env) {
	d := sleepMin + time.Duration(env.Rand().Int64N(int64(sleepMax-sleepMin)))
	p.timer = env.After(d, "round")
}

// Input implements node.Inputter.
func (p *Process) Input(env node.Env, in node.Message) {
	if m, ok := in.(Propose); ok && p.Leader.Proposal == "" {
		p.Leader.Proposal = m.Value
		env.Log().Info("client proposes", "value", m.Value)
	}
}

// Timer implements node.Handler: start a new round unless a decision is
// known.
func (p *Process) Timer(env node.Env, t node.Timer) {
	if t.Name != "round" || p.Leader.Decided {
		return
	}
	p.startRound(env)
	p.sleep(env)
}

func (p *Process) startRound(env node.Env) {
	l := &p.Leader
	// The smallest round of ours above everything seen.
	r := (l.MaxSeen/int64(p.N)+1)*int64(p.N) + int64(p.Index) + 1
	for r <= l.MaxSeen {
		r += int64(p.N)
	}
	l.Round, l.Phase, l.Lasts, l.MaxSeen = r, Collecting, nil, r
	// A round number must never be reused, even across a crash.
	p.put(env, leaderKey, l.MaxSeen)
	env.Log().Info("start round", "round", r)
	p.broadcast(env, Collect{Round: r})
}

func (p *Process) broadcast(env node.Env, m node.Message) {
	env.Send(p.Self, m)
	for _, peer := range env.Peers() {
		env.Send(peer, m)
	}
}

func (p *Process) put(env node.Env, key string, v any) {
	b, err := node.Marshal(v)
	if err != nil {
		panic(err)
	}
	env.Disk().Put(key, b)
}

func (p *Process) saveAgent(env node.Env) {
	if p.persists() {
		p.put(env, agentKey, p.Agent)
	}
}

func (p *Process) see(round int64) {
	if round > p.Leader.MaxSeen {
		p.Leader.MaxSeen = round
	}
}

// Receive implements node.Handler.
func (p *Process) Receive(env node.Env, from node.ID, m node.Message) {
	switch m := m.(type) {
	case Collect:
		p.see(m.Round)
		p.onCollect(env, from, m)
	case Begin:
		p.see(m.Round)
		p.onBegin(env, m)
	case Last:
		p.onLast(env, from, m)
	case Accept:
		p.see(m.Round)
		p.onAccept(env, from, m)
	}
}

// onCollect: promise the round if it is above every promise made.
func (p *Process) onCollect(env node.Env, from node.ID, m Collect) {
	a := &p.Agent
	if m.Round <= a.Promised {
		return
	}
	a.Promised = m.Round
	p.saveAgent(env)
	env.Send(from, Last{Round: m.Round, AcceptedRound: a.AcceptedRound, AcceptedValue: a.AcceptedValue})
}

// onBegin: accept unless a higher round was promised.
func (p *Process) onBegin(env node.Env, m Begin) {
	a := &p.Agent
	if m.Round < a.Promised {
		return
	}
	if p.bug != "spec" {
		// Accepting a round is also a promise not to go below it. The
		// published specification kept the two counters apart.
		a.Promised = m.Round
	}
	a.AcceptedRound, a.AcceptedValue = m.Round, m.Value
	p.saveAgent(env)
	p.broadcast(env, Accept{Round: m.Round, Value: m.Value})
}

// onLast: collect promises; with a majority, begin phase 2.
func (p *Process) onLast(env node.Env, from node.ID, m Last) {
	l := &p.Leader
	if m.Round != l.Round || l.Phase != Collecting {
		return
	}
	for _, r := range l.Lasts {
		if r.From == from {
			return // a duplicate
		}
	}
	l.Lasts = append(l.Lasts, Response{From: from, Last: m})
	if len(l.Lasts) < p.majority() {
		return
	}
	v := p.choose()
	l.Phase = Begun
	env.Log().Info("begin", "round", l.Round, "value", v)
	p.broadcast(env, Begin{Round: l.Round, Value: v})
}

// choose picks the value phase 2 submits.
func (p *Process) choose() string {
	l := &p.Leader
	var best Last
	for _, r := range l.Lasts {
		if r.Last.AcceptedRound == 0 {
			continue
		}
		if p.bug == "latest-response" {
			best = r.Last // the latest received wins, whatever its round
		} else if r.Last.AcceptedRound > best.AcceptedRound {
			best = r.Last
		}
	}
	if best.AcceptedRound > 0 {
		return best.AcceptedValue
	}
	if l.Proposal != "" {
		return l.Proposal
	}
	return "v-" + string(p.Self)
}

// onAccept: learn the decision when a majority accepted one round.
func (p *Process) onAccept(env node.Env, from node.ID, m Accept) {
	l := &p.Leader
	acc := l.Accepts[m.Round]
	if acc == nil {
		acc = map[node.ID]string{}
		l.Accepts[m.Round] = acc
	}
	acc[from] = m.Value
	p.pruneAccepts()
	if l.Decided || len(acc) < p.majority() {
		return
	}
	l.Decided, l.Decision = true, m.Value
	env.Cancel(p.timer)
	env.Log().Info("learned decision", "round", m.Round, "value", m.Value)
}

// keptRounds bounds the accept table: a learner only needs recent rounds,
// and an unbounded table would grow with every round of a long run.
const keptRounds = 8

// pruneAccepts drops the oldest rounds beyond keptRounds.
func (p *Process) pruneAccepts() {
	acc := p.Leader.Accepts
	for len(acc) > keptRounds {
		oldest := int64(math.MaxInt64)
		for r := range acc {
			oldest = min(oldest, r)
		}
		delete(acc, oldest)
	}
}

// System describes paxos to the drivers.
var System = &system.System{
	Name:    "paxos",
	Summary: "WiDS-paper Paxos: every process leads and accepts; leaders retry rounds after random sleeps",
	Codec:   node.NewCodec().MustRegister(Propose{}, Collect{}, Last{}, Begin{}, Accept{}),
	New:     New,
	Bugs: []system.Bug{
		{Name: "latest-response", Summary: "phase 2 submits the value of the latest response instead of the highest round's (breaks agreement)"},
		{Name: "spec", Summary: "the published spec's separate promise/accept counters: an agent's accepted round can decrease"},
		{Name: "no-persist", Summary: "agents keep promises in memory only; a crash forgets them (breaks agreement under churn)"},
	},
	Sim: system.SimDefaults{
		Nodes: 7,
		Drop:  0.3,
		Churn: 1,
		Steps: 50_000,
		Time:  5 * time.Second,
	},
	Scenario: scenario,
	Validate: func(cfg system.Config) error {
		if err := cfg.CheckParams(); err != nil {
			return fmt.Errorf("paxos: %w", err)
		}
		return nil
	},
}

// scenario: every process gets a client proposal at a random moment of
// the first 30 ms; churn (on by default) crashes and restarts processes.
func scenario(ctl system.Controller) {
	for i, id := range ctl.Nodes() {
		at := time.Duration(ctl.Rand().Int64N(int64(30 * time.Millisecond)))
		value := fmt.Sprintf("x%d", i+1)
		ctl.At(at, func() { ctl.Input(id, Propose{Value: value}) })
	}
}
