package lamport

// Vector clocks are computed offline here, from a recorded causal order,
// rather than carried by the nodes: the recording already holds every
// send→receive edge, so a node pays nothing at run time for a clock that
// only exports (ShiViz) need. Lamport clocks order events; vector clocks
// also say which events are concurrent.

// Vector is an event's vector clock: entry p counts the events of
// process p that happened before the event or are the event itself.
type Vector []uint64

// Order is how two vector clocks compare.
type Order int

// The outcomes of Compare.
const (
	Concurrent Order = iota // neither happened before the other
	Before                  // the first happened before the second
	After                   // the second happened before the first
	Equal                   // the same event (or equal clocks)
)

func (o Order) String() string {
	return [...]string{"concurrent", "before", "after", "equal"}[o]
}

// Compare says whether v happened before w, after it, is equal to it, or
// is concurrent with it. Clocks of different lengths compare as if padded
// with zeros.
func (v Vector) Compare(w Vector) Order {
	less, more := false, false
	for i := range max(len(v), len(w)) {
		var a, b uint64
		if i < len(v) {
			a = v[i]
		}
		if i < len(w) {
			b = w[i]
		}
		switch {
		case a < b:
			less = true
		case a > b:
			more = true
		}
	}
	switch {
	case less && more:
		return Concurrent
	case less:
		return Before
	case more:
		return After
	}
	return Equal
}

// Vectors holds the vector clocks of a sequence of events, in one block
// of memory: a million events of seven processes take 56 MB, where a
// slice per event would add a header and an allocation each.
type Vectors struct {
	procs int
	flat  []uint64
	last  []int // per process, the index of its latest event (-1: none yet)
}

// NewVectors prepares clocks for procs processes; events is a capacity
// hint.
func NewVectors(procs, events int) *Vectors {
	vs := &Vectors{procs: procs, flat: make([]uint64, 0, procs*events), last: make([]int, procs)}
	for i := range vs.last {
		vs.last[i] = -1
	}
	return vs
}

// Len is the number of events added.
func (vs *Vectors) Len() int { return len(vs.flat) / max(vs.procs, 1) }

// At is the clock of event i (shared memory: do not modify it).
func (vs *Vectors) At(i int) Vector {
	return Vector(vs.flat[i*vs.procs : (i+1)*vs.procs : (i+1)*vs.procs])
}

// Add appends the next event, at process proc, and returns its index.
// cause is the index of an earlier event whose clock this one merges (the
// send of the message it receives), or -1 for a local event. Events must
// be added in a causal order: every cause before the events it causes,
// each process's events in its own order.
func (vs *Vectors) Add(proc, cause int) int {
	i := vs.Len()
	if cause >= i {
		panic("lamport: an event's cause must be added before it")
	}
	if p := vs.last[proc]; p >= 0 {
		vs.flat = append(vs.flat, vs.flat[p*vs.procs:(p+1)*vs.procs]...)
	} else {
		vs.flat = append(vs.flat, make([]uint64, vs.procs)...)
	}
	v := vs.At(i)
	if cause >= 0 {
		for p, c := range vs.At(cause) {
			v[p] = max(v[p], c)
		}
	}
	v[proc]++
	vs.last[proc] = i
	return i
}
