package statedb

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/dgraph-io/badger/v4"
	"github.com/fxamacker/cbor/v2"
	"go.starlark.net/starlark"

	"github.com/replaycheck/replaycheck/node"
	"github.com/replaycheck/replaycheck/predicates"
	"github.com/replaycheck/replaycheck/replay"
	"github.com/replaycheck/replaycheck/system"
)

// Predicates is what checking a predicates script over the trace found.
type Predicates struct {
	Script     string      `json:"script"`
	Hash       string      `json:"hash"` // ScriptHash when checked
	Declared   []Declared  `json:"predicates"`
	Violations []Violation `json:"violations"`
	Errors     []string    `json:"errors,omitempty"`
	Steps      int         `json:"steps"`
	Seconds    float64     `json:"seconds"`
}

// Declared is one predicate of the script.
type Declared struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
}

// Violation is a predicates.Violation, kept as text.
type Violation struct {
	Predicate string  `json:"predicate"`
	Kind      string  `json:"kind"`
	Step      int     `json:"step"`
	EndStep   int     `json:"end_step"` // liveness: the step it held again (-1: open at the end)
	Alarm     bool    `json:"alarm"`
	AlarmStep int     `json:"alarm_step,omitempty"`
	Node      node.ID `json:"node"`
	Lamport   uint64  `json:"lamport"`
	Time      int64   `json:"time"`
	Event     string  `json:"event"`
	Witness   string  `json:"witness,omitempty"`
	Aux       string  `json:"aux,omitempty"`
}

// Flip is a step after which a predicate's value differs from its value
// before the step (predicates hold before the first step).
type Flip struct {
	Step      int    `cbor:"-"`
	Predicate string `cbor:"1,keyasint"`
	Holds     bool   `cbor:"2,keyasint"`
}

// ScriptHash identifies a predicates script as it is now: its content and
// that of every .star file beside it (which it may load()).
func ScriptHash(script string) (string, error) {
	h := xxhash.New()
	main, err := os.ReadFile(script)
	if err != nil {
		return "", fmt.Errorf("read predicates: %w", err)
	}
	h.Write(main)
	others, _ := filepath.Glob(filepath.Join(filepath.Dir(script), "*.star"))
	slices.Sort(others)
	for _, p := range others {
		if filepath.Base(p) == filepath.Base(script) {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		io.WriteString(h, "\x00"+filepath.Base(p)+"\x00")
		io.Copy(h, f)
		f.Close()
	}
	return fmt.Sprintf("%016x", h.Sum64()), nil
}

// predCollector observes a checker step by step and records where each
// predicate flips.
type predCollector struct {
	c     *predicates.Checker
	holds map[string]bool
	flips []Flip
}

func newPredCollector(c *predicates.Checker) *predCollector {
	pc := &predCollector{c: c, holds: map[string]bool{}}
	for _, p := range c.Predicates() {
		pc.holds[p.Name] = true
	}
	return pc
}

func (pc *predCollector) observe(step int) error {
	if err := pc.c.Observe(); err != nil {
		return err
	}
	now := pc.c.Holds()
	for _, p := range pc.c.Predicates() {
		if v, ok := now[p.Name]; ok && v != pc.holds[p.Name] {
			pc.flips = append(pc.flips, Flip{Step: step, Predicate: p.Name, Holds: v})
			pc.holds[p.Name] = v
		}
	}
	return nil
}

func (pc *predCollector) results(script string, elapsed time.Duration) (*Predicates, []Flip) {
	rep := pc.c.Finish()
	hash, _ := ScriptHash(script)
	p := &Predicates{Script: script, Hash: hash, Steps: rep.Steps, Seconds: elapsed.Seconds()}
	for _, d := range pc.c.Predicates() {
		p.Declared = append(p.Declared, Declared{Name: d.Name, Kind: d.Kind})
	}
	for _, v := range rep.Violations {
		out := Violation{Predicate: v.Predicate, Kind: v.Kind, Step: v.Step, EndStep: v.EndStep, Alarm: v.Alarm,
			AlarmStep: v.AlarmStep, Node: v.Node, Lamport: v.Lamport, Time: v.Time, Event: v.Describe(), Witness: v.Witness}
		if v.Aux != nil && v.Aux != starlark.None {
			out.Aux = v.Aux.String()
		}
		p.Violations = append(p.Violations, out)
	}
	for _, e := range rep.Errors {
		p.Errors = append(p.Errors, fmt.Sprintf("%s failed at step #%d and was disabled: %s", e.Name, e.Step, e.Message))
	}
	return p, pc.flips
}

// CheckPredicates replays tr, checking script after every step, and
// returns what it found with the steps where each predicate flips. State
// hashes are not compared (the database build did).
func CheckPredicates(tr *replay.Trace, reg *system.Registry, script string, progress func(string, int, int)) (*Predicates, []Flip, error) {
	return checkPredicates(tr, reg, script, progress, nil)
}

func checkPredicates(tr *replay.Trace, reg *system.Registry, script string, progress func(string, int, int), stop func() bool) (*Predicates, []Flip, error) {
	start := time.Now()
	r, err := replay.New(tr, reg, replay.Options{SkipStateHashes: true})
	if err != nil {
		return nil, nil, err
	}
	c, err := predicates.Load(script, r, predicates.Options{To: -1})
	if err != nil {
		return nil, nil, err
	}
	pc := newPredCollector(c)
	n := tr.Len()
	for step := range n {
		if err := r.Next(); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, err
		}
		if err := pc.observe(step); err != nil {
			return nil, nil, err
		}
		if step%2048 == 0 || step == n-1 {
			if stop != nil && stop() {
				return nil, nil, ErrStopped
			}
			if progress != nil {
				progress("checking", step+1, n)
			}
		}
	}
	p, flips := pc.results(script, time.Since(start))
	return p, flips, nil
}

// Predicates returns the stored predicate results (nil: none).
func (db *DB) Predicates() *Predicates { return db.preds }

func (db *DB) loadPredicates(txn *badger.Txn) error {
	item, err := txn.Get([]byte{nsPredGen})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", db.dir, err)
	}
	db.gen = uint32(item.Version())
	if item, err = txn.Get(predKey(db.gen, 'I')); err != nil {
		return fmt.Errorf("read the predicate results in %s: %w", db.dir, err)
	}
	var p Predicates
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &p) }); err != nil {
		return fmt.Errorf("read the predicate results in %s: %w", db.dir, err)
	}
	db.preds = &p
	return nil
}

// SetPredicates replaces the stored predicate results.
func (db *DB) SetPredicates(p *Predicates, flips []Flip) error {
	gen := db.gen + 1
	info, err := json.Marshal(p)
	if err != nil {
		return err
	}
	wb := db.bdb.NewManagedWriteBatch()
	defer wb.Cancel()
	if err := wb.SetEntryAt(badger.NewEntry(predKey(gen, 'I'), info), metaVersion); err != nil {
		return err
	}
	for i := 0; i < len(flips); {
		j := i
		for j < len(flips) && flips[j].Step == flips[i].Step {
			j++
		}
		v, err := cbor.Marshal(flips[i:j])
		if err != nil {
			return err
		}
		k := binary.BigEndian.AppendUint64(predKey(gen, 'F'), uint64(flips[i].Step))
		if err := wb.SetEntryAt(badger.NewEntry(k, v), metaVersion); err != nil {
			return err
		}
		i = j
	}
	// The generation pointer goes last: until it is written, readers see
	// the previous results.
	if err := wb.SetEntryAt(badger.NewEntry([]byte{nsPredGen}, nil), uint64(gen)); err != nil {
		return err
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("write the predicate results to %s: %w", db.dir, err)
	}
	old := db.gen
	db.gen, db.preds = gen, p
	if old > 0 {
		if err := db.bdb.DropPrefix(predKey(old, 'I')[:5]); err != nil {
			return fmt.Errorf("drop old predicate results in %s: %w", db.dir, err)
		}
	}
	return nil
}

// NextFlip finds the nearest step after pos (forward) or before pos
// (backward) where any predicate flips, with its flips.
func (db *DB) NextFlip(pos int, forward bool) (int, []Flip, bool, error) {
	if db.gen == 0 {
		return 0, nil, false, nil
	}
	prefix := predKey(db.gen, 'F')
	target := pos + 1
	if !forward {
		target = pos - 1
		if target < 0 {
			return 0, nil, false, nil
		}
	}
	txn := db.bdb.NewTransactionAt(latest, false)
	defer txn.Discard()
	opts := badger.DefaultIteratorOptions
	opts.Prefix = prefix
	opts.Reverse = !forward
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	it.Seek(binary.BigEndian.AppendUint64(slices.Clone(prefix), uint64(max(target, 0))))
	if !it.Valid() {
		return 0, nil, false, nil
	}
	item := it.Item()
	step := int(binary.BigEndian.Uint64(item.Key()[len(prefix):]))
	var flips []Flip
	if err := item.Value(func(v []byte) error { return cbor.Unmarshal(v, &flips) }); err != nil {
		return 0, nil, false, err
	}
	for i := range flips {
		flips[i].Step = step
	}
	return step, flips, true, nil
}
