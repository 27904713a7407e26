// Package bad holds a handler with one of each kind of nondeterminism.
package bad

import (
	cryptorand "crypto/rand"
	"io"
	"maps"
	"math/big"
	"math/rand"
	randv2 "math/rand/v2"
	"net"
	"os"
	"sort"
	"time"

	"github.com/replaycheck/replaycheck/node"
)

type Node struct {
	Members map[node.ID]int
	Log     []node.ID
	ch      chan int
	last    time.Time
	Total   int
	Target  node.ID
}

func (n *Node) Init(env node.Env) { // want Init:`reaches\(goroutine:go statement,clock:time.Now\)`
	go n.background()      // want `a goroutine runs outside the event the runtime records`
	n.last = time.Now()    // want `time.Now reads the wall clock, which is not recorded and differs on replay; use env.Now\(\)`
	_ = time.Since(n.last) // want `use env.Now\(\).Sub\(t\)`
	_ = time.Until(n.last) // want `use t.Sub\(env.Now\(\)\)`
	clock := time.Now      // want `time.Now reads the wall clock`
	_ = clock
}

func (n *Node) Receive(env node.Env, from node.ID, m node.Message) { // want Receive:`reaches\(select:select,channel:channel send,clock:time.Now,rand:rand.Intn,cryptorand:crypto/rand.Read\)`
	select { // want `select picks among ready channels at random`
	case v := <-n.ch:
		_ = v
	default:
	}
	n.ch <- 1        // want `channel send.*exchanges values with`
	<-n.ch           // want `a channel operation exchanges values with`
	for range n.ch { // want `a channel operation`
	}
	_ = rand.Intn(10)    // want `rand.Intn draws from the process-wide generator, which is seeded at random and not recorded; use env.Rand\(\)`
	_ = randv2.IntN(10)  // want `rand.IntN draws from the process-wide generator`
	rand.Shuffle(2, nil) // want `rand.Shuffle draws`
	b := make([]byte, 8)
	cryptorand.Read(b)                                      // want `crypto/rand.Read reads random bytes the runtime does not record unless the system routes them`
	_, _ = cryptorand.Int(cryptorand.Reader, big.NewInt(9)) // want `crypto/rand.Int reads random bytes`
	io.ReadFull(cryptorand.Reader, b)                       // want `crypto/rand.Reader reads random bytes`
	n.pick(env)
}

func (n *Node) Timer(env node.Env, t node.Timer) { // want Timer:`reaches\(channel:channel receive,timer:time.Sleep,io:os.ReadFile,maporder:the order of env.Send calls,effects\)`
	time.Sleep(time.Millisecond)     // want `time.Sleep blocks the event on the wall clock.*\(in a task: t.Sleep\(d\)\)`
	<-time.After(time.Second)        // want `time.After starts a real timer` `channel receive|a channel operation`
	tm := time.NewTimer(time.Second) // want `time.NewTimer starts a real timer that fires on the wall clock, not as a recorded event; use env.After\(d, name\)`
	tm.Stop()
	time.AfterFunc(time.Second, func() {}) // want `time.AfterFunc starts a real timer`
	_ = time.Tick(time.Second)             // want `time.Tick starts a real timer`
	data, _ := os.ReadFile("state")        // want `os.ReadFile does file, network or process I/O`
	_ = data
	f, _ := os.Create("out")       // want `os.Create does file`
	f.Write(nil)                   // want `os.File.Write does file`
	_ = os.Getenv("HOME")          // want `os.Getenv does file`
	c, _ := net.Dial("tcp", "x:1") // want `net.Dial does file, network`
	c.Close()                      // want `net.Conn.Close does file`
	for id, v := range n.Members { // want `map iteration order is random on every run and here it decides the order of env.Send calls`
		env.Send(id, v)
	}
	for id := range n.Members { // want `decides the order of env.After calls`
		env.After(time.Second, string(id))
	}
	for id := range n.Members { // want `decides the order of appends to n.Log`
		n.Log = append(n.Log, id)
	}
	for id := range n.Members { // want `decides which key gets which env.Rand\(\) draw`
		n.Members[id] = env.Rand().IntN(3)
	}
	for id := range n.Members { // want `decides the order of calls to gossip`
		n.gossip(env, id)
	}
	for id := range maps.Keys(n.Members) { // want `decides the order of env.Send calls`
		env.Send(id, 1)
	}
	for id, v := range maps.All(n.Members) { // want `decides the order of env.Send calls`
		env.Send(id, v)
	}
	for v := range maps.Values(n.Members) { // want `decides the order of env.After calls`
		env.After(time.Duration(v), "t")
	}
	_ = n.first()
	_ = n.keys()
	n.armEither(env)
	n.sendCount(env)
	n.armThenGoOn(env)
	n.sendToFirst(env)
	n.gossipAfterSum(env)
	n.armIfSecondBig(env)
	n.sendWhatIsLeft(env, &pending{M: map[node.ID]int{}})
	n.armAfterCounting(env)
	n.armForFirst(env)
	n.drawForFirst(env)
}

// pick is a method of a handler type, so a root itself.
func (n *Node) pick(env node.Env) node.ID { // want pick:`reaches\(clock:time.Now,rand:rand.Int\)`
	r := rand.New(rand.NewSource(1)) // a private generator from a fixed seed: deterministic
	_ = r.Intn(3)
	_ = rand.Int() // want `rand.Int draws from the process-wide generator`
	return choose()
}

// choose is a helper reached from pick: its findings say how.
func choose() node.ID { // want choose:`reaches\(clock:time.Now\)`
	return node.ID(time.Now().String()) // want `time.Now reads .*\[in bad.choose, reached from \(\*Node\).pick\]`
}

func (n *Node) gossip(env node.Env, to node.ID) { env.Send(to, "hi") } // want gossip:`reaches\(effects\)`

func (n *Node) background() {}

// first returns whichever key the map yields first.
func (n *Node) first() node.ID { // want first:`reaches\(maporder:which key or value is returned\)`
	for id := range n.Members { // want `decides which key or value is returned`
		return id
	}
	return ""
}

// keys returns the keys unsorted: the caller sees map order.
func (n *Node) keys() []node.ID { // want keys:`reaches\(maporder:the order of appends to out\)`
	var out []node.ID
	for id := range n.Members { // want `decides the order of appends to out.*vet knows only sort.\* and slices.Sort\* in this function`
		out = append(out, id)
	}
	return out
}

// sortedKeys sorts what it collected: no finding.
func (n *Node) sortedKeys() []string {
	var out []string
	for id := range n.Members {
		out = append(out, string(id))
	}
	sort.Strings(out)
	return out
}

// dropStale collects keys to delete after the loop: their order reaches
// nothing, no finding.
func (n *Node) dropStale() int {
	var stale []node.ID
	for id, v := range n.Members {
		if v == 0 {
			stale = append(stale, id)
		}
	}
	for _, id := range stale {
		delete(n.Members, id)
	}
	return len(stale)
}

// stalest keeps collected keys past deleting them: its caller sees map
// order.
func (n *Node) stalest() []node.ID { // want stalest:`reaches\(maporder:the order of appends to stale\)`
	var stale []node.ID
	for id, v := range n.Members { // want `decides the order of appends to stale`
		if v == 0 {
			stale = append(stale, id)
		}
	}
	for _, id := range stale {
		delete(n.Members, id)
	}
	return stale
}

// notAHandler is never reached from a handler method: nothing reported.
func notAHandler() { // want notAHandler:`reaches\(goroutine:go statement,clock:time.Now\)`
	go func() {}()
	_ = time.Now()
}

// Loops that act once and leave, but where the map's order still
// decides something: which of two exits is taken, what was counted
// before, whether the loop went on, which key is the target, what a
// module function reads.

func (n *Node) armEither(env node.Env) { // want armEither:`reaches\(maporder:the order of env.After calls,effects\)`
	for _, v := range n.Members { // want `decides the order of env.After calls`
		if v == 1 {
			env.After(time.Second, "one")
			return
		}
		if v == 2 {
			env.After(time.Second, "two")
			return
		}
	}
}

func (n *Node) sendCount(env node.Env) { // want sendCount:`reaches\(maporder:the order of env.Send calls,effects\)`
	count := 0
	for _, v := range n.Members { // want `decides the order of env.Send calls`
		count++
		if v > 3 {
			env.Send("n1", count)
			return
		}
	}
}

func (n *Node) armThenGoOn(env node.Env) { // want armThenGoOn:`reaches\(maporder:the order of env.After calls,effects\)`
	for _, v := range n.Members { // want `decides the order of env.After calls`
		if v > 3 {
			env.After(time.Second, "big")
		}
		if v > 5 {
			return
		}
	}
}

func (n *Node) sendToFirst(env node.Env) { // want sendToFirst:`reaches\(maporder:the order of env.Send calls,effects\)`
	for id, v := range n.Members { // want `decides the order of env.Send calls`
		if v > 3 {
			env.Send(id, "you")
			return
		}
	}
}

func (n *Node) gossipAfterSum(env node.Env) { // want gossipAfterSum:`reaches\(maporder:the order of calls to gossip .which sends, sets timers or draws from env.Rand.,effects\)`
	for _, v := range n.Members { // want `decides the order of calls to gossip`
		n.Total += v
		if v > 3 {
			n.gossip(env, "n1")
			return
		}
	}
}

// A condition between the effect and the exit that reads the entry: the
// timer is set only if the bigger entry comes first.
func (n *Node) armIfSecondBig(env node.Env) { // want armIfSecondBig:`reaches\(maporder:the order of env.After calls,effects\)`
	for _, v := range n.Members { // want `decides the order of env.After calls`
		if v > 3 {
			if v > 5 {
				env.After(time.Second, "big")
			}
			return
		}
	}
}

type pending struct{ M map[node.ID]int }

// delete writes too: what is sent depends on how many entries went first.
func (n *Node) sendWhatIsLeft(env node.Env, p *pending) { // want sendWhatIsLeft:`reaches\(maporder:the order of env.Send calls,effects\)`
	for k, v := range n.Members { // want `decides the order of env.Send calls`
		delete(p.M, k)
		if v > 3 {
			env.Send("n1", p.M)
			return
		}
	}
}

// A condition on state the loop counts in: the effect depends on how
// many entries came first.
func (n *Node) armAfterCounting(env node.Env) { // want armAfterCounting:`reaches\(maporder:the order of env.After calls,effects\)`
	for _, v := range n.Members { // want `decides the order of env.After calls`
		n.Total++
		if v > 3 {
			if n.Total > 2 {
				env.After(time.Second, "late")
			}
			return
		}
	}
}

// The loop keeps the entry it left at: which one is the order's.
func (n *Node) armForFirst(env node.Env) { // want armForFirst:`reaches\(maporder:the order of env.After calls,effects\)`
	for id, v := range n.Members { // want `decides the order of env.After calls`
		if v > 3 {
			n.Log = n.Log[:0]
			n.Target = id
			env.After(time.Second, "expire")
			return
		}
	}
}

// One draw, but kept with the entry that got it.
func (n *Node) drawForFirst(env node.Env) { // want drawForFirst:`reaches\(maporder:which key gets which env.Rand\(\) draw,effects\)`
	for id, v := range n.Members { // want `decides which key gets which env.Rand\(\) draw`
		if v > 3 {
			n.Members[id] = env.Rand().IntN(3)
			return
		}
	}
}
